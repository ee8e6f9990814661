import { actLikeLlamaServer, actLikeOllama, actLikeVllm } from './support/fake-runners';
import { useWorkerHarness } from './support/harness';

/**
 * Backend probing: what the worker learns from llama-server, vLLM and Ollama, and what reaches
 * the gateway in register / models_update. Probe failures must leave capabilities unknown
 * (omitted) and never hold up registration.
 */
describe('worker daemon: backend probing', () => {
  const { env, startWorker } = useWorkerHarness();
  const probing = { probe: true } as const;

  describe('llama-server', () => {
    it('advertises the per-slot context, vision and tool support from /props, the runner and the endpoints it serves', async () => {
      env.backend.models = ['llama3.1-8b'];
      actLikeLlamaServer(env.backend, {
        ctxSize: 16384,
        slots: 4,
        vision: true,
        templateCaps: { supports_tools: true, supports_tool_calls: true, supports_system_role: true },
        build: 'b6500-1a2b3c4d',
      });
      env.backend.endpointProbe['/v1/completions'] = { status: 400, json: { error: { message: '"prompt" must be provided' } } };
      env.backend.endpointProbe['/v1/embeddings'] = {
        status: 501,
        json: { error: { code: 501, message: 'This server does not support embeddings. Start it with `--embeddings`', type: 'not_supported_error' } },
      };
      env.backend.endpointProbe['/v1/responses'] = { status: 404, json: { error: { code: 404, message: 'File Not Found', type: 'not_found_error' } } };
      const worker = startWorker({ ...probing, discoverModels: true, models: [] });
      const register = await (await env.gateway.connection(1)).next('register');

      expect(register.models).toEqual(['llama3.1-8b']);
      // 16384 split over 4 slots: one request can use 4096, not 16384.
      expect(register.capabilities).toEqual({ 'llama3.1-8b': { context_length: 4096, vision: true, tools: true } });
      expect(register.runner).toEqual({ type: 'llama-server', version: 'b6500-1a2b3c4d' });
      expect(register.endpoints).toEqual(['/v1/chat/completions', '/v1/completions', '/v1/messages']);
      expect(env.backend.relayed).toEqual([]); // probes are not inference
      expect(env.backend.probes.filter((r) => r.method === 'POST').every((r) => r.body === '{}')).toBe(true);
      expect(worker.logs).toContainEqual(expect.objectContaining({ msg: 'backend detected', runner: 'llama-server', version: 'b6500-1a2b3c4d' }));
    });

    it('reports tools: false when the chat template cannot render tool calls', async () => {
      env.backend.models = ['m'];
      actLikeLlamaServer(env.backend, { ctxSize: 8192, slots: 1, templateCaps: { supports_tools: true, supports_tool_calls: false } });
      startWorker({ ...probing, models: ['m'] });
      expect((await (await env.gateway.connection(1)).next('register')).capabilities).toEqual({
        m: { context_length: 8192, vision: false, tools: false },
      });
    });

    it('asks a llama-server router for each model without making it load the model', async () => {
      env.backend.models = ['small', 'big'];
      actLikeLlamaServer(env.backend, { ctxSize: 2048, slots: 1 });
      const routerProps = env.backend.routes.get('GET /props')!;
      env.backend.routes.set('GET /props', (req) => {
        const answer = routerProps(req);
        if (typeof answer === 'string' || 'ndjson' in answer || !req.query.get('model')) return answer;
        const json = answer.json as { default_generation_settings: { n_ctx: number } };
        json.default_generation_settings.n_ctx = req.query.get('model') === 'big' ? 32768 : 4096;
        return answer;
      });
      startWorker({ ...probing, discoverModels: true, models: [] });
      const register = await (await env.gateway.connection(1)).next('register');
      expect(register.capabilities).toEqual({ small: { context_length: 4096, vision: false }, big: { context_length: 32768, vision: false } });
      const perModel = env.backend.probes.filter((r) => r.path === '/props' && r.query);
      expect(perModel.map((r) => new URLSearchParams(r.query).get('autoload'))).toEqual(['false', 'false']);
    });
  });

  it("relays a runner API backend's own GET /v1/capabilities document as it is, and nothing when the backend has none", async () => {
    env.backend.models = ['rk'];
    const doc = { api_version: '1.0.0', engine: 'llamacpp', resources: { gpus: [{ id: 0, vram_total_mb: 24576, vram_free_mb: 8000 }] }, queue: { depth: 2 } };
    env.backend.routes.set('GET /v1/capabilities', () => ({ status: 200, json: doc }));
    startWorker({ ...probing, models: ['rk'] });
    expect((await (await env.gateway.connection(1)).next('register')).runner_capabilities).toEqual(doc);
  });

  it('sends no runner_capabilities when the backend does not serve GET /v1/capabilities', async () => {
    env.backend.models = ['plain'];
    startWorker({ ...probing, models: ['plain'] });
    expect('runner_capabilities' in (await (await env.gateway.connection(1)).next('register'))).toBe(false);
  });

  it('vLLM: advertises max_model_len per model and the version from /version, sending the backend key on probes', async () => {
    env.backend.models = ['llama3.1-8b', 'qwen2.5-coder'];
    actLikeVllm(env.backend, { maxModelLen: { 'llama3.1-8b': 32768, 'qwen2.5-coder': 131072 }, version: '0.11.0' });
    startWorker({ ...probing, discoverModels: true, models: [], backendApiKey: 'vllm-key-1' });
    const register = await (await env.gateway.connection(1)).next('register');
    expect(register.capabilities).toEqual({ 'llama3.1-8b': { context_length: 32768 }, 'qwen2.5-coder': { context_length: 131072 } });
    expect(register.runner).toEqual({ type: 'vllm', version: '0.11.0' });
    expect(env.backend.probes.length).toBeGreaterThan(0);
    expect(env.backend.probes.every((r) => r.headers.authorization === 'Bearer vllm-key-1')).toBe(true);
  });

  it('Ollama: advertises vision and tools from /api/show capabilities and the <arch>.context_length of model_info', async () => {
    env.backend.models = ['llava:7b', 'qwen3:8b', 'nomic-embed-text:latest'];
    actLikeOllama(env.backend, {
      version: '0.12.6',
      models: {
        'llava:7b': { capabilities: ['completion', 'vision'], architecture: 'llama', contextLength: 4096 },
        'qwen3:8b': { capabilities: ['completion', 'tools', 'thinking'], architecture: 'qwen3', contextLength: 40960 },
        'nomic-embed-text:latest': { capabilities: ['embedding'], architecture: 'nomic-bert', contextLength: 2048 },
      },
    });
    startWorker({ ...probing, discoverModels: true, models: [] });
    const register = await (await env.gateway.connection(1)).next('register');
    expect(register.capabilities).toEqual({
      'llava:7b': { vision: true, tools: false, context_length: 4096 },
      'qwen3:8b': { vision: false, tools: true, context_length: 40960 },
      'nomic-embed-text:latest': { vision: false, tools: false, context_length: 2048 },
    });
    expect(register.runner).toEqual({ type: 'ollama', version: '0.12.6' });
    const shown = env.backend.probes.filter((r) => r.path === '/api/show').map((r) => JSON.parse(r.body) as { model: string });
    expect(shown.map((b) => b.model).sort()).toEqual(['llava:7b', 'nomic-embed-text:latest', 'qwen3:8b']);
  });

  it('an OpenAI-compatible server with nothing else to say registers as openai-compatible with its endpoints and no capabilities', async () => {
    startWorker({ ...probing, models: ['llama3'] });
    const register = await (await env.gateway.connection(1)).next('register');
    expect(register.runner).toEqual({ type: 'openai-compatible' });
    expect(register.endpoints).toEqual(['/v1/chat/completions', '/v1/responses', '/v1/messages']);
    expect(register).not.toHaveProperty('capabilities');
  });

  it('advertises a tokenizer (`/tokenize`, llama-server and vLLM) so the gateway can count tokens with it', async () => {
    env.backend.endpointProbe['/tokenize'] = { status: 200, json: { tokens: [] } };
    startWorker({ ...probing, models: ['llama3'] });
    const register = await (await env.gateway.connection(1)).next('register');
    expect(register.endpoints).toEqual(['/v1/chat/completions', '/v1/responses', '/v1/messages', '/tokenize']);
  });

  it('re-probes on models_refresh and sends what changed, with the priority, in models_update', async () => {
    env.backend.models = ['llama3.1-8b'];
    actLikeLlamaServer(env.backend, { ctxSize: 8192, slots: 2 });
    startWorker({ ...probing, discoverModels: true, models: [], priority: 10 });
    const conn = await env.gateway.connection(1);
    const register = await conn.next('register');
    expect(register.capabilities).toEqual({ 'llama3.1-8b': { context_length: 4096, vision: false } });
    expect(register.priority).toBe(10);

    // The operator restarts llama-server with one slot and a vision projector.
    actLikeLlamaServer(env.backend, { ctxSize: 8192, slots: 1, vision: true });
    env.backend.endpointProbe['/v1/responses'] = { status: 404, json: { detail: 'Not Found' } };
    conn.send({ type: 'models_refresh', reason: 'admin' });
    expect(await conn.next('models_update')).toEqual({
      type: 'models_update',
      models: ['llama3.1-8b'],
      current_load: 0,
      capabilities: { 'llama3.1-8b': { context_length: 8192, vision: true } },
      endpoints: ['/v1/chat/completions', '/v1/messages'],
      priority: 10,
    });
  });

  it('explicit --capability values override probed ones field by field', async () => {
    env.backend.models = ['llama3.1-8b'];
    actLikeLlamaServer(env.backend, { ctxSize: 8192, slots: 1, vision: true, templateCaps: { supports_tools: true, supports_tool_calls: true } });
    startWorker({
      ...probing,
      discoverModels: true,
      models: [],
      capabilities: { 'llama3.1-8b': { vision: false, context_length: 2048, json_mode: true } },
    });
    expect((await (await env.gateway.connection(1)).next('register')).capabilities).toEqual({
      'llama3.1-8b': { vision: false, context_length: 2048, json_mode: true, tools: true },
    });
  });

  describe('probe failures leave the capability unknown and never stop registration', () => {
    it('/props with malformed JSON: no capabilities, a warning logged once, and the next refresh does not warn again', async () => {
      env.backend.models = ['llama3'];
      env.backend.routes.set('GET /props', () => ({ status: 200, text: '{"default_generation_settings": {"n_ctx": 40' }));
      const worker = startWorker({ ...probing, models: ['llama3'] });
      const conn = await env.gateway.connection(1);
      const register = await conn.next('register');
      expect(register.capabilities).toBeUndefined();
      expect(register.runner).toEqual({ type: 'openai-compatible' });
      conn.send({ type: 'models_refresh' });
      expect((await conn.next('models_update')).capabilities).toBeUndefined();
      const warnings = worker.logs.filter((l) => l.level === 'warn' && String(l.msg).includes('/props'));
      expect(warnings).toHaveLength(1);
    });

    it('Ollama /api/show failing for one model leaves only that model unknown', async () => {
      env.backend.models = ['good:1b', 'broken:1b'];
      actLikeOllama(env.backend, {
        version: '0.12.6',
        models: {
          'good:1b': { capabilities: ['completion', 'tools'], architecture: 'llama', contextLength: 8192 },
          'broken:1b': { architecture: 'llama', contextLength: 8192, fail: { status: 500, json: { error: 'unable to load model' } } },
        },
      });
      const worker = startWorker({ ...probing, discoverModels: true, models: [] });
      const register = await (await env.gateway.connection(1)).next('register');
      expect(register.capabilities).toEqual({ 'good:1b': { vision: false, tools: true, context_length: 8192 } });
      expect(worker.logs).toContainEqual(expect.objectContaining({ level: 'warn', probe: 'ollama /api/show', models: ['broken:1b'] }));
    });

    it('a backend that never answers: the daemon registers after the probe deadline with none of the optional fields', async () => {
      for (const route of ['GET /props', 'GET /api/version', 'GET /version', 'GET /v1/models']) env.backend.routes.set(route, () => 'hang');
      for (const p of ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/embeddings', '/v1/messages']) {
        env.backend.endpointProbe[p] = 'hang';
      }
      const worker = startWorker({ ...probing, models: ['llama3'] }, { probeTimeoutMs: 100 });
      const conn = await env.gateway.connection(1);
      const register = await conn.next('register');
      expect(register.models).toEqual(['llama3']);
      for (const field of ['capabilities', 'endpoints', 'runner']) expect(register).not.toHaveProperty(field);
      expect(worker.logs.filter((l) => l.level === 'warn' && l.probe === 'backend')).toHaveLength(1);
    });

    it('a backend that is down: registers anyway, without capabilities, endpoints or runner', async () => {
      const deadUrl = env.backend.url;
      await env.backend.close();
      startWorker({ ...probing, models: ['llama3'], backendUrl: deadUrl });
      const register = await (await env.gateway.connection(1)).next('register');
      for (const field of ['capabilities', 'endpoints', 'runner']) expect(register).not.toHaveProperty(field);
    });

    it('an endpoint probe whose connection drops makes the endpoint list unknown (omitted) rather than incomplete', async () => {
      env.backend.endpointProbe['/v1/embeddings'] = 'destroy';
      const worker = startWorker({ ...probing, models: ['llama3'] });
      const register = await (await env.gateway.connection(1)).next('register');
      expect(register).not.toHaveProperty('endpoints');
      expect(register.runner).toEqual({ type: 'openai-compatible' });
      expect(worker.logs).toContainEqual(expect.objectContaining({ level: 'warn', probe: 'endpoints' }));
    });
  });

  it('classifies endpoint answers: 404, 405 and 501 absent; 400, 401, 422 and 500 present; a 404 about a model present', async () => {
    Object.assign(env.backend.endpointProbe, {
      '/v1/chat/completions': { status: 422, json: { detail: [{ loc: ['body', 'messages'], msg: 'Field required' }] } },
      '/v1/completions': { status: 500, json: { error: 'internal' } },
      '/v1/responses': { status: 405, json: { detail: 'Method Not Allowed' } },
      '/v1/embeddings': { status: 404, json: { error: "model '' not found" } },
      '/v1/messages': { status: 404, text: '404 page not found' },
    });
    startWorker({ ...probing, models: ['llama3'] });
    expect((await (await env.gateway.connection(1)).next('register')).endpoints).toEqual(['/v1/chat/completions', '/v1/completions', '/v1/embeddings']);
  });

  it('a backend answering 404 on every endpoint gets no endpoint list (which would take it out of all routing), and a warning', async () => {
    for (const p of ['/v1/chat/completions', '/v1/responses', '/v1/messages']) {
      env.backend.endpointProbe[p] = { status: 404, json: { detail: 'Not Found' } };
    }
    const worker = startWorker({ ...probing, models: ['llama3'] });
    const register = await (await env.gateway.connection(1)).next('register');
    expect(register).not.toHaveProperty('endpoints');
    expect(worker.logs).toContainEqual(expect.objectContaining({ level: 'warn', msg: expect.stringContaining('is BACKEND_URL its root?') }));
  });

  it('with probing off, the backend gets no probe and register carries only the configured hints', async () => {
    env.backend.models = ['llama3'];
    actLikeLlamaServer(env.backend, { ctxSize: 8192, slots: 1, vision: true });
    startWorker({ probe: false, models: ['llama3'], capabilities: { llama3: { tools: true } }, priority: 0 });
    const register = await (await env.gateway.connection(1)).next('register');
    expect(register.capabilities).toEqual({ llama3: { tools: true } });
    expect(register.priority).toBe(0);
    expect(register).not.toHaveProperty('runner');
    expect(register).not.toHaveProperty('endpoints');
    expect(env.backend.requests).toEqual([]);
  });
});
