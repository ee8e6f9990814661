import { JOB_ARTIFACTS, JobArtifacts } from '../../src/artifacts/job-artifacts.port';
import { TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { chat, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { checkAnswer, findOperation, operations } from './openapi-check';
import { openDocumentGateway } from './document-gateway';

// Split from openapi.e2e-spec.ts (same describe, its own gateway): every route's real answer against the document.

type Json = any;

describe('OpenAPI document (GET /openapi.json)', () => {
  let gw: TestGateway;
  let doc: Json;
  let configFile: string;

  beforeAll(async () => {
    ({ gw, doc, configFile } = await openDocumentGateway());
  });
  afterAll(() => gw.close());

  it("the gateway's real answers on every route have the documented status and shape (and request handling is unchanged)", async () => {
    const problems: string[] = [];
    const exercised = new Set<string>();
    const check = async (method: string, path: string, res: Response | { status: number; headers: Headers; text: string }) => {
      const text = 'text' in res && typeof res.text === 'string' ? res.text : await (res as Response).text();
      const op = findOperation(doc, method, path);
      if (op) exercised.add(`${op.method.toUpperCase()} ${op.path}`);
      problems.push(...checkAnswer(doc, method, path, res.status, res.headers.get('content-type'), text));
      return { status: res.status, json: text && res.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : undefined };
    };
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` }) =>
      check(
        method,
        path,
        await fetch(`${gw.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json', ...headers },
          body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
        }),
      );

    // Health and metrics.
    for (const path of ['/health', '/health/live', '/health/ready', '/metrics']) expect((await call('GET', path, undefined, {})).status).toBe(200);

    // Client routes: a relayed request, the raw-body checks, both dialects' errors.
    const { worker, ack } = await ScriptedWorker.register(gw.workerUrl, {
      models: ['llama3:8b'],
      worker_name: 'gpu-node-1',
      capabilities: { 'llama3:8b': { tools: true, context_length: 8192 } },
    });
    expect((await call('GET', '/v1/models', undefined, {})).json.data[0].id).toBe('llama3:8b');
    expect((await call('GET', '/v1/capabilities', undefined, {})).json.api_version).toBe(doc.info.version);
    const example = doc.paths['/v1/chat/completions'].post['x-examples'].typical;
    const pending = post(gw.url, '/v1/chat/completions', example.request.body);
    const forwarded = await worker.next('request');
    expect(JSON.parse(forwarded.body)).toEqual(example.request.body); // the raw body still reaches the worker
    worker.complete(forwarded.request_id, example.response.body);
    const relayed = await pending;
    expect(relayed.json).toEqual(example.response.body);
    await check('POST', '/v1/chat/completions', relayed);
    for (const path of ['/v1/completions', '/v1/responses', '/v1/embeddings'])
      expect((await call('POST', path, '{not json', {})).json.error.code).toBe('invalid_request');
    expect((await call('POST', '/v1/chat/completions', chat('gpt-5'), {})).json.error.code).toBe('model_not_found');
    expect((await call('POST', '/v1/messages', { model: 'gpt-5', max_tokens: 8, messages: [] }, {})).json).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', code: 'model_not_found' },
    });
    // count_tokens for a model no worker serves: the gateway's estimate, marked as one.
    const counted = await fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-5', messages: [{ role: 'user', content: 'What is Switchboard?' }] }),
    });
    expect(counted.headers.get('x-switchboard-estimate')).toBe('true');
    expect((await check('POST', '/v1/messages/count_tokens', counted)).json.input_tokens).toBeGreaterThan(0);
    const tooLarge = await call('POST', '/v1/messages', { model: 'llama3:8b', max_tokens: 8, messages: [{ role: 'user', content: 'x'.repeat(70_000) }] }, {});
    expect(tooLarge).toMatchObject({ status: 413, json: { type: 'error', error: { type: 'request_too_large', code: 'payload_too_large' } } });

    // Tasks: the typical exchange, its stream, status and cancel; refusals exactly as documented.
    const tasks = doc.paths['/v1/tasks'].post['x-examples'];
    expect((await call('POST', '/v1/tasks', tasks.typical.request.body, {})).json.task_id).toBe('review-42');
    const taskRequest = await worker.next('request');
    expect(JSON.parse(taskRequest.body)).toMatchObject({ model: 'llama3:8b', stream: true });
    worker.chunk(taskRequest.request_id, 'data: {"choices":[{"delta":{"content":"Done."}}]}\n\ndata: [DONE]\n\n');
    worker.complete(taskRequest.request_id, '', 200, { body: '' });
    expect((await call('GET', '/v1/tasks/review-42/stream', undefined, {})).status).toBe(200);
    expect((await call('GET', '/v1/tasks/review-42', undefined, {})).json).toMatchObject({ status: 'completed', tokens_out: 1 });
    expect((await call('POST', '/v1/tasks/review-42/cancel', undefined, {})).json.status).toBe('completed');
    for (const name of ['duplicate', 'malformed', 'context', 'unknown_model']) {
      const res = await call('POST', '/v1/tasks', tasks[name].request.body, {});
      expect([name, res.status, res.json]).toEqual([name, tasks[name].response.status, tasks[name].response.body]);
    }
    for (const [method, path] of [
      ['GET', '/v1/tasks/review-43'],
      ['GET', '/v1/tasks/review-43/stream'],
      ['POST', '/v1/tasks/review-43/cancel'],
    ]) {
      const res = await call(method, path, undefined, {});
      expect([path, res.status, res.json]).toEqual([path, 404, doc.paths['/v1/tasks/{id}'].get['x-examples'].unknown.response.body]);
    }

    // Providers and workers.
    expect((await call('GET', '/admin/providers')).status).toBe(200);
    expect((await call('POST', '/admin/providers', { name: 'gpu-a', secret: 'a-long-worker-secret', models: ['llama3:70b'] })).status).toBe(201);
    expect((await call('POST', '/admin/providers', { name: 'gpu-a', secret: 'a-long-worker-secret' })).status).toBe(409);
    expect((await call('POST', '/admin/providers', { name: 'gpu-b', max_queue_len: -1, bogus: 1 })).json.error.code).toBe('validation_failed');
    expect((await call('POST', '/admin/providers', '[1]')).json.error.code).toBe('invalid_request');
    expect((await call('PATCH', '/admin/providers/gpu-a', { enabled: false })).json.enabled).toBe(false);
    expect((await call('PATCH', '/admin/providers/nope', { enabled: false })).status).toBe(404);
    expect((await call('GET', '/admin/workers')).json.data).toHaveLength(1);
    expect((await call('GET', `/admin/workers/${ack.worker_id}`)).json.in_flight_request_ids).toEqual([]);
    expect((await call('POST', `/admin/workers/${ack.worker_id}/refresh-models`)).status).toBe(202);
    expect((await call('GET', '/admin/stats')).status).toBe(200);
    expect((await call('GET', '/admin/cluster')).json).toMatchObject({ enabled: false, degraded: false, members: [{ self: true }] });
    expect((await call('POST', `/admin/workers/${ack.worker_id}/drain`, { timeout_secs: 1000 * 1000 })).json.error.code).toBe('validation_failed');
    expect((await call('POST', `/admin/workers/${ack.worker_id}/drain`, { timeout_secs: 5, reason: 'kernel upgrade' })).json.cordon).toBe('worker');
    expect((await call('GET', '/admin/cordons')).json.workers[0].name).toBe('gpu-node-1');
    await worker.next('graceful_shutdown');
    await worker.closed;
    expect((await call('POST', `/admin/workers/${ack.worker_id}/undrain`)).json).toMatchObject({ undrained: true, connected: false });

    // Pools.
    expect((await call('GET', '/v1/pools')).json.data.length).toBeGreaterThan(0);
    expect((await call('GET', '/v1/pools/local/health')).json.id).toBe('local');
    expect((await call('POST', '/v1/pools/local/drain', { deadline_ms: 1000, reason: 'maintenance' })).json.draining).toBe(true);
    expect((await call('POST', '/v1/pools/local/undrain')).json.draining).toBe(false);
    expect((await call('DELETE', '/admin/providers/gpu-a')).json).toEqual({ deleted: 'gpu-a' });
    expect((await call('DELETE', '/admin/providers/local')).status).toBe(409);
    expect((await call('DELETE', '/admin/providers/local?force=maybe')).status).toBe(400);

    // Reloads.
    expect((await call('POST', '/admin/reload')).json).toMatchObject({ reloaded: true, config_file: configFile });
    expect((await call('POST', '/v1/pools/local/reload', { models: ['llama3:8b'], aliases: { fast: 'llama3:8b' } })).json.aliases).toEqual({
      fast: 'llama3:8b',
    });
    expect((await call('POST', '/v1/pools/local/reload', { aliases: { fast: 'llama3:70b' } })).json.error.problems).toHaveLength(1);
    expect((await call('POST', '/v1/pools/nope/reload', {})).status).toBe(404);
    expect((await call('POST', '/v1/pools/local/reload', { models: [], aliases: {} })).json).toMatchObject({ models: [], aliases: {} });

    // Keys, tenants, usage.
    const created = await call('POST', '/admin/keys', { name: 'billing-service', tenant: 'team-a', rpm: 600 });
    expect(created.json.key).toMatch(/^sb-/);
    expect((await call('POST', '/admin/keys', { name: 'x' })).status).toBe(400);
    expect((await call('GET', '/admin/keys')).json.data).toHaveLength(1);
    expect((await call('GET', `/admin/keys/${created.json.id}`)).json.id).toBe(created.json.id);
    expect((await call('PATCH', `/admin/keys/${created.json.id}`, { enabled: false, rpm: null })).json.status).toBe('revoked');
    expect((await call('DELETE', `/admin/keys/${created.json.id}`)).json).toEqual({ deleted: created.json.id });
    expect((await call('GET', '/admin/keys/key_missing')).status).toBe(404);
    expect((await call('PUT', '/admin/tenants/team-a', { rpm: 600, max_priority: 'high' })).json.source).toBe('admin');
    expect((await call('PUT', '/admin/tenants/team-a', { rpm: -1 })).status).toBe(400);
    expect((await call('GET', '/admin/tenants/team-a')).json.settings.rpm).toBe(600);
    expect((await call('GET', '/admin/tenants')).json.data).toHaveLength(1);
    expect((await call('DELETE', '/admin/tenants/team-a')).json.now.source).toBe('default');
    expect((await call('DELETE', '/admin/tenants/team-a')).status).toBe(404);
    expect((await call('GET', '/admin/usage?group_by=tenant&since=2025-01-01')).json.object).toBe('usage');
    expect((await call('GET', '/admin/usage?group_by=week')).json.error.param).toBe('group_by');
    expect((await call('GET', '/admin/audit?limit=1000&since=2025-01-01')).json).toMatchObject({ object: 'list', next_before: null });
    expect((await call('GET', '/admin/audit?operation=load')).json.error.param).toBe('operation');

    // Artifacts (anonymous callers: the default tenant).
    const artifact = { kind: 'plan', session_id: 'sess-42', tags: ['v1'], content: { steps: ['a'] } };
    const stored = await call('POST', '/v1/artifacts', artifact, {});
    expect(stored.status).toBe(201);
    expect((await call('POST', '/v1/artifacts', artifact, {})).status).toBe(200);
    expect((await call('POST', '/v1/artifacts', { ...artifact, tags: ['a b'] }, {})).json.error.param).toBe('tags[0]');
    expect((await call('POST', '/v1/artifacts', { kind: 'trace', content: 'x'.repeat(70_000) }, {})).status).toBe(413);
    expect((await call('GET', '/v1/artifacts?session_id=sess-42&tag=v1', undefined, {})).json.data[0].id).toBe(stored.json.id);
    expect((await call('GET', '/v1/artifacts?limit=1000', undefined, {})).status).toBe(400);
    expect((await call('GET', `/v1/artifacts/${stored.json.id}`, undefined, {})).json.content).toEqual(artifact.content);
    expect((await call('GET', `/v1/artifacts/${'0'.repeat(64)}`, undefined, {})).status).toBe(404);
    expect((await call('GET', `/v1/artifacts/${stored.json.id}/transcript`, undefined, {})).status).toBe(404);
    const jobId = gw.app.get<JobArtifacts>(JOB_ARTIFACTS).recordJob({
      jobId: 'task-1',
      tenant: 'default',
      params: { model: 'llama3:8b' },
      modelRef: 'llama3:8b',
      status: 'completed',
      tokensOut: 1,
      decodeTimeMs: 5,
      transcript: 'id: 1\nevent: token\ndata: {"t":"hi","i":0}\n\n',
      createdAt: Date.now(),
    });
    expect((await call('GET', `/v1/artifacts/${jobId}`, undefined, {})).json.kind).toBe('job');
    expect((await call('GET', `/v1/artifacts/${jobId}/transcript`, undefined, {})).status).toBe(200);

    // Model lifecycle: this gateway has no governance key, so every lifecycle route says so.
    expect((await call('POST', '/v1/models/load', { modelId: 'llama3:70b', verifiedOpToken: 'x' })).json.error.code).toBe('lifecycle_disabled');
    expect((await call('GET', '/v1/models/load/load-1')).json.error.code).toBe('lifecycle_disabled');
    expect((await call('POST', '/v1/models/unload', { modelId: 'llama3:8b', verifiedOpToken: 'x' })).json.error.code).toBe('lifecycle_disabled');
    expect((await call('POST', '/v1/cache/flush', { scope: 'all', verifiedOpToken: 'x' })).json.error.code).toBe('lifecycle_disabled');

    // The admin token.
    expect((await call('GET', '/admin/stats', undefined, {})).status).toBe(401);
    expect((await call('GET', '/v1/pools', undefined, { authorization: 'Bearer wrong' })).status).toBe(401);

    expect(problems).toEqual([]);
    // Every documented operation was exercised.
    expect(
      operations(doc)
        .map((o) => `${o.method.toUpperCase()} ${o.path}`)
        .filter((r) => !exercised.has(r)),
    ).toEqual([]);
  });
});
