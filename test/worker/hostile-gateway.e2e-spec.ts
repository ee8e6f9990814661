import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkerDaemonOptions } from '../../src/worker/daemon';
import { Frame, GatewayConnection } from './support/fake-gateway';
import { FakeOllama, FakeVllm } from './support/fake-lifecycle';
import { requestFrame, useWorkerHarness } from './support/harness';

/**
 * A compromised gateway (or whoever sits in the middle of a plain ws:// link) drives the real
 * daemon: it names backend paths the worker never advertised and lifecycle arguments that walk
 * out of --lora-dir. The fake backend records every request it gets: none of these may reach it,
 * let alone with BACKEND_API_KEY, and the gateway gets an `error` frame / a failed status for each.
 */
describe('worker daemon: a hostile gateway', () => {
  const { env, startWorker } = useWorkerHarness();
  const API_KEY = 'backend-key-7f3a9c';

  async function registered(): Promise<GatewayConnection> {
    const conn = await env.gateway.connection(1);
    await conn.next('register');
    return conn;
  }

  describe('request paths', () => {
    const HOSTILE = [
      '/v1/load_lora_adapter',
      '/v1/unload_lora_adapter',
      '/api/pull',
      '/sleep',
      '/reset_prefix_cache',
      '/%2e%2e/etc',
      '/%2E%2E/%2E%2E/etc/passwd',
      '/v1/chat/completions/../../admin',
      '/v1/chat/completions/%2e%2e/%2e%2e/v1/load_lora_adapter',
      '/v1/chat/completions?lora_path=/etc/shadow',
      '/v1/chat/completions?',
      '/v1%2fchat%2fcompletions',
      '/v1/chat%2Fcompletions',
      '/%2fv1/chat/completions',
      '/v1%5cchat%5ccompletions',
      '/v1/chat/completions%5c..%5cadmin',
      '/v1/%252e%252e/admin',
      '/v1\\chat\\completions',
      '//127.0.0.1/v1/chat/completions',
      'v1/chat/completions',
      '/v1/chat/completions%00',
      '/v1/models',
      '/v1/chat/completions/',
    ];

    it('answers every path it did not advertise with an error frame, and the backend never sees it nor the API key', async () => {
      const { logs } = startWorker({ backendApiKey: API_KEY });
      const conn = await registered();

      for (const path of HOSTILE) {
        const frame = {
          ...requestFrame({ body: { model: 'llama3', lora_name: 'x', lora_path: '/etc', messages: [{ role: 'user', content: 'Hi' }] } }),
          endpoint_path: path,
        };
        conn.send(frame);
        const answer = await conn.final(frame.request_id);
        expect({ path, answer }).toEqual({
          path,
          answer: { type: 'error', request_id: frame.request_id, code: 'endpoint_not_allowed', message: expect.stringMatching(/^refused by the worker: /) },
        });
      }
      expect(env.backend.requests).toEqual([]);

      // The link is still good and an advertised path goes through, with the key: the refusals
      // above are the guard's doing, not a worker that relays nothing.
      const good = requestFrame();
      conn.send(good);
      expect((await conn.final(good.request_id)).status_code).toBe(200);
      expect(env.backend.requests.map((r) => `${r.method} ${r.path}?${r.query}`)).toEqual(['POST /v1/chat/completions?']);
      expect(env.backend.requests[0].headers.authorization).toBe(`Bearer ${API_KEY}`);

      const refusals = logs.filter((l) => l.msg === 'refused a request for a path this worker does not relay');
      expect(refusals).toHaveLength(HOSTILE.length);
      expect(refusals.every((l) => l.level === 'warn' && typeof l.request_id === 'string' && typeof l.reason === 'string')).toBe(true);
    });

    it('does not let the gateway choose the Host the backend sees nor start an expect/100-continue handshake', async () => {
      startWorker({ backendApiKey: API_KEY });
      const conn = await registered();
      const req = requestFrame({ headers: { 'content-type': 'application/json', host: 'admin.internal', expect: '100-continue' } });
      conn.send(req);
      expect((await conn.final(req.request_id)).status_code).toBe(200);
      expect(env.backend.requests[0].headers.host).toBe(new URL(env.backend.url).host);
      expect(env.backend.requests[0].headers).not.toHaveProperty('expect');
    });

    it('relays only the endpoints the probe found and advertised, under their canonical spelling', async () => {
      startWorker({ backendApiKey: API_KEY, probe: true });
      const conn = await env.gateway.connection(1);
      const register = await conn.next('register');
      // The fake serves chat, messages and responses; embeddings and completions answer 404 to the probe.
      expect(register.endpoints).toEqual(['/v1/chat/completions', '/v1/responses', '/v1/messages']);
      const probes = env.backend.requests.length;

      const embeddings = { ...requestFrame({ body: { model: 'llama3', input: 'x' } }), endpoint_path: '/v1/embeddings' };
      conn.send(embeddings);
      expect(await conn.final(embeddings.request_id)).toMatchObject({
        type: 'error',
        code: 'endpoint_not_allowed',
        message: expect.stringContaining('/v1/embeddings is not an inference endpoint this worker advertised'),
      });

      const spelled = { ...requestFrame(), endpoint_path: '/v1/./%63hat/completions' };
      conn.send(spelled);
      expect((await conn.final(spelled.request_id)).status_code).toBe(200);
      expect(env.backend.requests.slice(probes).map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/chat/completions']);
    });
  });

  describe('lifecycle arguments', () => {
    const FEATURES = ['response_start', 'cancel_reasons', 'model_lifecycle'];
    const fast: WorkerDaemonOptions = { lifecyclePollMs: 5, lifecycleProgressIntervalMs: 0, lifecycleRequestTimeoutMs: 2_000 };
    const FINAL = ['completed', 'failed', 'unsupported'];
    let root: string;
    let loras: string;

    beforeEach(() => {
      env.gateway.ackFeatures = FEATURES;
      root = realpathSync(mkdtempSync(join(tmpdir(), 'hostile-lora-')));
      loras = join(root, 'loras');
      mkdirSync(join(loras, 'acme', 'sql'), { recursive: true });
      mkdirSync(join(root, 'secret'));
      symlinkSync(join(root, 'secret'), join(loras, 'escape'));
    });
    afterEach(() => rmSync(root, { recursive: true, force: true }));

    const final = (conn: GatewayConnection, taskId: string): Promise<Frame> =>
      conn.next('lifecycle_status', (f) => f.task_id === taskId && FINAL.includes(f.status as string));
    const statuses = (conn: GatewayConnection, taskId: string) => conn.frames.filter((f) => f.task_id === taskId).map((f) => f.status);

    it('vLLM: refuses LoRA paths outside --lora-dir (absolute, "../", a symlink escape) and never asks vLLM to load them', async () => {
      const vllm = new FakeVllm(env.backend, 'base');
      vllm.adapterDirs.add(join(root, 'secret'));
      vllm.adapterDirs.add(join(loras, 'escape'));
      vllm.adapterDirs.add(join(loras, 'acme', 'sql'));
      const { logs } = startWorker({ backendApiKey: API_KEY, runner: 'vllm', loraDir: loras, discoverModels: true, models: [] }, fast);
      const conn = await registered();

      const hostile: Array<[string, RegExp]> = [
        [join(root, 'secret'), /model_id .* is not a model name/],
        ['../secret', /"\." or "\.\." segment/],
        ['acme/../../secret', /"\." or "\.\." segment/],
        ['escape', /resolves outside --lora-dir/],
      ];
      for (const [i, [model, error]] of hostile.entries()) {
        conn.send({ type: 'model_load', task_id: `bad-${i}`, model_id: model });
        const done = await final(conn, `bad-${i}`);
        expect({ model, status: done.status, error: done.error }).toEqual({ model, status: 'failed', error: expect.stringMatching(error) });
      }
      // Path syntax is refused before the operation is even accepted; the symlink only on disk.
      expect(statuses(conn, 'bad-0')).toEqual(['failed']);
      expect(statuses(conn, 'bad-3')).toEqual(['accepted', 'failed']);
      expect(env.backend.requests.filter((r) => r.method === 'POST')).toEqual([]);
      expect(vllm.loras.size).toBe(0);
      expect(logs.filter((l) => l.msg === 'lifecycle operation refused')).toHaveLength(3);

      // The same worker loads an adapter that is inside: the refusals above are not a broken load path.
      conn.send({ type: 'model_load', task_id: 'good', model_id: 'acme/sql' });
      expect((await final(conn, 'good')).status).toBe('completed');
      expect(env.backend.requests.filter((r) => r.path === '/v1/load_lora_adapter').map((r) => JSON.parse(r.body))).toEqual([
        { lora_name: 'acme/sql', lora_path: join(loras, 'acme', 'sql') },
      ]);
    });

    it('Ollama: refuses model names with traversal in model_id and evict_model, and nothing is pulled, loaded or unloaded', async () => {
      const ollama = new FakeOllama(env.backend, { 'llama3:latest': 1 });
      startWorker({ backendApiKey: API_KEY, runner: 'ollama', models: ['llama3:latest'] }, fast);
      const conn = await registered();

      const commands: Frame[] = [
        { type: 'model_load', task_id: 'o1', model_id: '../../../etc/passwd' },
        { type: 'model_load', task_id: 'o2', model_id: '/var/lib/ollama/blobs/x' },
        { type: 'model_load', task_id: 'o3', model_id: 'library\\..\\..\\x' },
        { type: 'model_load', task_id: 'o4', model_id: 'qwen2.5:7b', evict_model: 'llama3/../../x' },
        { type: 'model_load', task_id: 'o5', model_id: '%2e%2e/x' },
        { type: 'model_unload', task_id: 'o6', model_id: 'library/../x' },
        { type: 'cache_flush', task_id: 'o7', scope: 'model', model_id: '/etc' },
      ];
      for (const command of commands) {
        conn.send(command);
        const done = await final(conn, command.task_id as string);
        expect({ task: command.task_id, status: done.status }).toEqual({ task: command.task_id, status: 'failed' });
        expect(statuses(conn, command.task_id as string)).toEqual(['failed']);
      }
      expect(env.backend.requests).toEqual([]);
      expect(ollama.generated).toEqual([]);

      // An Ollama name with a namespace and a tag is a model name, not a path.
      ollama.pulls.set('library/qwen2.5:7b', { layers: [{ digest: 'sha256:0123456789abcdef0123', total: 10 }] });
      conn.send({ type: 'model_load', task_id: 'ok', model_id: 'library/qwen2.5:7b' });
      expect((await final(conn, 'ok')).status).toBe('completed');
      expect(env.backend.requests.map((r) => `${r.method} ${r.path}`)).toContain('POST /api/pull');
    });
  });
});
