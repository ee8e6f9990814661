import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JOB_ARTIFACTS, JobArtifacts } from '../../src/artifacts/job-artifacts.port';
import { apiVersion } from '../../src/control-plane/capabilities.service';
import { CONFIG_RELOAD_REFUSED, POOL_RELOAD_REFUSED } from '../../src/control-plane/control-plane.schemas';
import { DOCS_PATH, OPENAPI_PATH } from '../../src/openapi/openapi.setup';
import { TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { chat, eventually, post } from '../support/http';
import { lifecycleWorker, startLifecycleGateway } from '../lifecycle/support';
import { ScriptedWorker } from '../support/scripted-worker';
import { checkAnswer, checkOpenApiDocument, findOperation, operations, pathPattern, validate } from './openapi-check';
import { getJson, RegisteredRoute, startRecordingGateway } from './support';

type Json = any;

/** What the OpenAPI routes serve themselves (the worker link is a WebSocket upgrade, not a Fastify route). */
function isOpenApiRoute(path: string): boolean {
  return path === OPENAPI_PATH || path === DOCS_PATH || path.startsWith(`${DOCS_PATH}/`);
}

/** Model lifecycle routes: under /v1 like the client API, but admin work (admin token and a verifiedOpToken). */
const LIFECYCLE_PATHS = ['/v1/models/load', '/v1/models/load/{taskId}', '/v1/models/unload', '/v1/cache/flush'];

/** Pages rather than API, left out of the document on purpose (`@ApiExcludeController`). */
const NOT_API = [
  'GET /dashboard',
  'GET /dashboard/',
  'GET /dashboard/assets/{file}',
  'GET /auth/login',
  'GET /auth/callback',
  'GET /auth/session',
  'POST /auth/logout',
];

/** Every example of a media type, with the schema it must satisfy. */
function mediaExamples(doc: Json): Array<{ at: string; type: string; schema: Json; value: unknown }> {
  const out: Array<{ at: string; type: string; schema: Json; value: unknown }> = [];
  for (const { method, path, op } of operations(doc)) {
    const contents: Array<[string, Json]> = Object.entries<Json>(op.responses).map(([status, r]) => [
      `${method.toUpperCase()} ${path} ${status}`,
      r.content ?? {},
    ]);
    if (op.requestBody) contents.push([`${method.toUpperCase()} ${path} requestBody`, op.requestBody.content]);
    for (const [at, content] of contents) {
      for (const [type, media] of Object.entries<Json>(content)) {
        if (media.example !== undefined) out.push({ at: `${at} ${type} example`, type, schema: media.schema, value: media.example });
        for (const [name, ex] of Object.entries<Json>(media.examples ?? {}))
          out.push({ at: `${at} ${type} examples.${name}`, type, schema: media.schema, value: ex.value });
      }
    }
    for (const p of op.parameters ?? []) {
      const example = p.example ?? p.schema?.example;
      if (example !== undefined) out.push({ at: `${method.toUpperCase()} ${path} parameter ${p.name}`, type: 'parameter', schema: p.schema, value: example });
    }
  }
  return out;
}

/** The gateway's config file: valid, and changing nothing the tests look at. */
const CONFIG = 'routing:\n  strategy: smart\n';

describe('OpenAPI document (GET /openapi.json)', () => {
  let gw: TestGateway;
  let routes: RegisteredRoute[];
  let doc: Json;
  let configFile: string;

  beforeAll(async () => {
    configFile = join(mkdtempSync(join(tmpdir(), 'sb-openapi-')), 'config.yaml');
    writeFileSync(configFile, CONFIG);
    ({ gw, routes } = await startRecordingGateway({ MAX_BODY_BYTES: '65536', CONFIG_FILE: configFile }));
    const res = await fetch(`${gw.url}${OPENAPI_PATH}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    doc = await res.json();
  });
  afterAll(() => gw.close());

  it('is a valid OpenAPI 3 document: openapi 3.x, info, operations with responses, unique operationIds, declared tags and schemes, every $ref resolves', () => {
    expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(doc.info.title).toBe('Switchboard');
    expect(checkOpenApiDocument(doc)).toEqual([]);
  });

  it('info.version is the api_version of GET /v1/capabilities', async () => {
    const capabilities = await getJson(`${gw.url}/v1/capabilities`);
    expect(capabilities.status).toBe(200);
    expect(doc.info.version).toBe(capabilities.body.api_version);
    expect(doc.info.version).toBe(apiVersion());
  });

  it('documents every route the gateway registers (but the dashboard page), and nothing it does not', () => {
    const all = routes.filter((r) => r.method !== 'head' && !isOpenApiRoute(r.path)).map((r) => `${r.method.toUpperCase()} ${r.path}`);
    expect(all).toEqual(expect.arrayContaining(NOT_API));
    const served = all.filter((r) => !NOT_API.includes(r));
    expect(served).toEqual(expect.arrayContaining(['GET /health', 'POST /v1/chat/completions', 'POST /v1/pools/{id}/drain']));
    const documented = operations(doc).map((o) => `${o.method.toUpperCase()} ${o.path}`);
    expect(documented.filter((r) => !served.includes(r))).toEqual([]);
    expect(served.filter((r) => !documented.includes(r))).toEqual([]);
    // The OpenAPI routes themselves are served, and not documented.
    expect(routes.map((r) => r.path)).toEqual(expect.arrayContaining([OPENAPI_PATH, DOCS_PATH]));
    expect(Object.keys(doc.paths).filter(isOpenApiRoute)).toEqual([]);
  });

  it('describes the worker WebSocket only in words: /v1/worker/connect is not a path', () => {
    expect(doc.paths['/v1/worker/connect']).toBeUndefined();
    expect(doc.info.description).toContain('/v1/worker/connect');
  });

  it('covers client, admin, pool and health routes, the reload routes included', () => {
    const has = (method: string, path: string) => expect(doc.paths[path]?.[method]).toBeDefined();
    for (const p of ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/embeddings', '/v1/messages']) has('post', p);
    for (const p of ['/v1/models', '/v1/capabilities', '/health', '/health/live', '/health/ready', '/metrics', '/v1/pools', '/v1/pools/{id}/health'])
      has('get', p);
    for (const p of ['/v1/pools/{id}/drain', '/v1/pools/{id}/undrain', '/v1/pools/{id}/reload', '/admin/reload', '/admin/workers/{id}/drain']) has('post', p);
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/admin/')).length).toBeGreaterThanOrEqual(12);
    const reload = doc.paths['/admin/reload'].post;
    expect(Object.keys(reload.responses)).toEqual(expect.arrayContaining(['200', '400']));
    expect(reload.responses['400'].content['application/json'].examples.invalid_request.value.error.problems.length).toBeGreaterThan(0);
    const poolReload = doc.paths['/v1/pools/{id}/reload'].post;
    expect(Object.keys(resolve(doc, poolReload.requestBody.content['application/json'].schema).properties).sort()).toEqual([
      'aliases',
      'capabilities',
      'models',
    ]);
  });

  it('declares the security schemes: the admin bearer token, client keys as bearer or x-api-key; health routes need none', () => {
    expect(doc.components.securitySchemes).toMatchObject({
      AdminToken: { type: 'http', scheme: 'bearer' },
      ClientApiKey: { type: 'http', scheme: 'bearer' },
      ClientApiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key' },
    });
    for (const { path, op } of operations(doc)) {
      const names = (op.security ?? []).flatMap((s: Json) => Object.keys(s));
      if (path.startsWith('/admin/') || path.startsWith('/v1/pools') || LIFECYCLE_PATHS.includes(path))
        expect([path, op.security]).toEqual([path, [{ AdminToken: [] }]]);
      else if (path.startsWith('/v1/')) expect([path, op.security]).toEqual([path, [{ ClientApiKey: [] }, { ClientApiKeyHeader: [] }, {}]]);
      else expect([path, names]).toEqual([path, []]);
    }
  });

  it('documents the error bodies of both dialects: /v1/messages answers AnthropicError, every other route OpenAIError', () => {
    expect(resolve(doc, { $ref: '#/components/schemas/OpenAIError' }).properties.error.required).toEqual([
      'message',
      'type',
      'code',
      'param',
      'kind',
      'retriable',
    ]);
    expect(resolve(doc, { $ref: '#/components/schemas/AnthropicError' }).properties.type.enum).toEqual(['error']);
    for (const { path, op } of operations(doc)) {
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        if (Number(status) < 400 || path.startsWith('/health')) continue;
        const expected = path === '/v1/messages' ? 'AnthropicError' : 'OpenAIError';
        expect([path, status, response.content['application/json'].schema.$ref]).toEqual([path, status, `#/components/schemas/${expected}`]);
      }
    }
  });

  it('every example has the documented shape (request bodies, responses, parameters; SSE examples are data: lines of JSON)', () => {
    const examples = mediaExamples(doc);
    expect(examples.length).toBeGreaterThan(100);
    const problems = examples.flatMap(({ at, schema, value }) => validate(doc, schema, value, at));
    expect(problems).toEqual([]);
    for (const { at, value } of examples.filter((e) => e.type === 'text/event-stream')) {
      const data = String(value)
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6));
      expect([at, data.length > 0]).toEqual([at, true]);
      for (const d of data.filter((d) => d !== '[DONE]')) expect(() => JSON.parse(d)).not.toThrow();
    }
  });

  it('x-examples: drain, reload and capabilities (and the inference routes) carry exchanges whose requests and answers have the documented shapes', () => {
    const xOf = (method: string, path: string) => doc.paths[path][method]['x-examples'];
    for (const [method, path] of [
      ['post', '/v1/pools/{id}/drain'],
      ['post', '/admin/workers/{id}/drain'],
      ['post', '/admin/reload'],
      ['post', '/v1/pools/{id}/reload'],
      ['get', '/v1/capabilities'],
      ['post', '/v1/chat/completions'],
      ['post', '/v1/completions'],
      ['post', '/v1/responses'],
      ['post', '/v1/embeddings'],
      ['post', '/v1/messages'],
      ['post', '/v1/tasks'],
      ['get', '/v1/tasks/{id}/stream'],
      ['get', '/v1/tasks/{id}'],
      ['post', '/v1/tasks/{id}/cancel'],
    ]) {
      expect([path, Object.keys(xOf(method, path) ?? {}).length > 0]).toEqual([path, true]);
    }
    const problems: string[] = [];
    let count = 0;
    for (const { method, path, op } of operations(doc)) {
      for (const [name, ex] of Object.entries<Json>(op['x-examples'] ?? {})) {
        count++;
        const at = `${method.toUpperCase()} ${path} x-examples.${name}`;
        if (typeof ex.summary !== 'string' || !ex.summary) problems.push(`${at}: no summary`);
        if (!pathPattern(path).test(ex.request.path.split('?')[0])) problems.push(`${at}: ${ex.request.path} is not a ${path}`);
        // A request that is refused may well break the schema (that is what it shows); a served one may not.
        const served = ex.response.status < 400;
        if (ex.request.body !== undefined) {
          if (!op.requestBody) problems.push(`${at}: a body for an operation without one`);
          else if (served) problems.push(...validate(doc, op.requestBody.content['application/json'].schema, ex.request.body, `${at}.request.body`));
        } else if (op.requestBody?.required && served) problems.push(`${at}: the body is required`);
        const response = op.responses[String(ex.response.status)];
        if (!response) problems.push(`${at}: status ${ex.response.status} is not documented`);
        // An SSE answer (task streams) is documented as text/event-stream.
        else
          problems.push(
            ...validate(doc, (response.content['application/json'] ?? response.content['text/event-stream']).schema, ex.response.body, `${at}.response.body`),
          );
      }
    }
    expect(count).toBeGreaterThanOrEqual(20);
    expect(problems).toEqual([]);
  });

  it('the x-examples of refused requests (drain, reload, unknown model on every inference route) are what the gateway answers', async () => {
    const reload = doc.paths['/admin/reload'].post['x-examples'].refused;
    writeFileSync(configFile, CONFIG_RELOAD_REFUSED.file);
    const refused = await admin('POST', reload.request.path);
    writeFileSync(configFile, CONFIG);
    expect([refused.status, refused.json]).toEqual([reload.response.status, reload.response.body]);
    const pool = doc.paths['/v1/pools/{id}/reload'].post['x-examples'];
    expect((await admin('POST', '/admin/providers', { name: 'gpu-east', secret: 'a-long-worker-secret' })).status).toBe(201);
    const poolRefused = await admin('POST', pool.refused.request.path, pool.refused.request.body);
    expect([poolRefused.status, poolRefused.json]).toEqual([pool.refused.response.status, pool.refused.response.body]);
    expect(pool.refused.response.body.error.problems).toEqual(POOL_RELOAD_REFUSED.problems);
    const poolReloaded = await admin('POST', pool.reloaded.request.path, pool.reloaded.request.body);
    expect([poolReloaded.status, poolReloaded.json]).toEqual([pool.reloaded.response.status, pool.reloaded.response.body]);
    const poolUnknown = await admin('POST', pool.unknown.request.path, pool.unknown.request.body);
    expect([poolUnknown.status, poolUnknown.json]).toEqual([pool.unknown.response.status, pool.unknown.response.body]);
    expect((await admin('DELETE', '/admin/providers/gpu-east')).status).toBe(200);

    for (const path of ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/embeddings', '/v1/messages']) {
      const ex = doc.paths[path].post['x-examples'].unknown_model;
      const res = await post(gw.url, ex.request.path, ex.request.body);
      expect([path, res.status, res.json]).toEqual([path, ex.response.status, ex.response.body]);
    }
    const ex = doc.paths['/v1/pools/{id}/drain'].post['x-examples'];
    const unknown = await admin('POST', ex.unknown.request.path, ex.unknown.request.body);
    expect([unknown.status, unknown.json]).toEqual([ex.unknown.response.status, ex.unknown.response.body]);
    const invalid = await admin('POST', ex.invalid.request.path.replace('gpu-a', 'local'), ex.invalid.request.body);
    expect([invalid.status, invalid.json]).toEqual([ex.invalid.response.status, ex.invalid.response.body]);
    const worker = doc.paths['/admin/workers/{id}/drain'].post['x-examples'];
    const gone = await admin('POST', worker.unknown.request.path, worker.unknown.request.body);
    expect([gone.status, gone.json]).toEqual([worker.unknown.response.status, worker.unknown.response.body]);
  });

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

  async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  }
});

describe('OpenAPI document: model lifecycle', () => {
  it('with governance enabled, the lifecycle routes answer what the document says (and its refused x-examples are real answers)', async () => {
    const gw = await startLifecycleGateway();
    try {
      const doc = (await getJson(`${gw.url}${OPENAPI_PATH}`)).body;
      const problems: string[] = [];
      const check = (method: string, path: string, res: { status: number; headers: Headers; text: string }) =>
        problems.push(...checkAnswer(doc, method, path, res.status, res.headers.get('content-type'), res.text));
      const { worker, id } = await lifecycleWorker(gw, ['llama3:8b']);

      const loading = gw.call('/v1/models/load', {
        modelId: 'llama3:70b',
        evictModel: 'llama3:8b',
        gpuMemoryBudgetMB: 40000,
        workerId: id,
        verifiedOpToken: gw.token({ operation: 'model-load', modelId: 'llama3:70b', evictModel: 'llama3:8b', gpuMemoryBudgetMB: 40000, workerId: id }),
      });
      const load = await worker.next('model_load');
      const started = await loading;
      check('post', '/v1/models/load', started);
      worker.send({ type: 'lifecycle_status', task_id: load.task_id, status: 'completed', gpu_memory_used_mb: 38500 });
      await eventually(async () => (await gw.get(`/v1/models/load/${load.task_id}`)).json.status === 'completed');
      check('get', `/v1/models/load/${load.task_id}`, await gw.get(`/v1/models/load/${load.task_id}`));
      worker.send({ type: 'models_update', models: ['llama3:70b'] });
      await eventually(async () => (await gw.get(`/admin/workers/${id}`)).json.models.includes('llama3:70b'));

      const unloading = gw.call('/v1/models/unload', {
        modelId: 'llama3:70b',
        workerId: id,
        verifiedOpToken: gw.token({ operation: 'model-unload', modelId: 'llama3:70b', workerId: id }),
      });
      worker.send({ type: 'lifecycle_status', task_id: (await worker.next('model_unload')).task_id, status: 'completed', gpu_memory_freed_mb: 38000 });
      check('post', '/v1/models/unload', await unloading);
      const flushing = gw.call('/v1/cache/flush', { scope: 'all', verifiedOpToken: gw.token({ operation: 'cache-flush', scope: 'all' }) });
      worker.send({ type: 'lifecycle_status', task_id: (await worker.next('cache_flush')).task_id, status: 'completed', entries_removed: 5 });
      check('post', '/v1/cache/flush', await flushing);
      check('get', '/admin/audit', await gw.get('/admin/audit?limit=3'));
      expect(problems).toEqual([]);

      const unknown = doc.paths['/v1/models/unload'].post['x-examples'].unknown;
      const res = await gw.call(unknown.request.path, { ...unknown.request.body, verifiedOpToken: gw.token({ operation: 'model-unload', modelId: 'gpt-5' }) });
      expect([res.status, res.json]).toEqual([unknown.response.status, unknown.response.body]);
      const missing = doc.paths['/v1/cache/flush'].post['x-examples'].missing;
      const refused = await gw.call(missing.request.path, missing.request.body);
      expect([refused.status, refused.json]).toEqual([missing.response.status, missing.response.body]);
      const signers = doc.paths['/v1/models/load'].post['x-examples'].signers;
      const one = await gw.call(signers.request.path, {
        ...signers.request.body,
        verifiedOpToken: gw.token({ operation: 'model-load', modelId: 'llama3:70b', signers: ['alice'] }),
      });
      expect([one.status, one.json]).toEqual([signers.response.status, signers.response.body]);
      worker.close();
    } finally {
      await gw.close();
    }
  });
});

describe('OpenAPI document as configured', () => {
  it('with REQUIRE_API_KEYS=true client routes need a key, and without ADMIN_TOKEN the admin scheme says the admin API is off', async () => {
    const { gw } = await startRecordingGateway({ REQUIRE_API_KEYS: 'true', ADMIN_TOKEN: '' });
    try {
      const doc = (await getJson(`${gw.url}${OPENAPI_PATH}`)).body;
      expect(doc.paths['/v1/chat/completions'].post.security).toEqual([{ ClientApiKey: [] }, { ClientApiKeyHeader: [] }]);
      expect(doc.paths['/v1/capabilities'].get.security).toEqual([{ ClientApiKey: [] }, { ClientApiKeyHeader: [] }]);
      expect(doc.components.securitySchemes.AdminToken.description).toContain('no ADMIN_TOKEN configured');
      // The document is public even when the API needs keys.
      expect((await fetch(`${gw.url}/v1/models`)).status).toBe(401);
    } finally {
      await gw.close();
    }
  });
});

function resolve(doc: Json, schema: Json): Json {
  return schema.$ref
    ? resolve(
        doc,
        schema.$ref
          .slice(2)
          .split('/')
          .reduce((n: Json, k: string) => n[k], doc),
      )
    : schema;
}
