import { writeFileSync } from 'node:fs';
import { apiVersion } from '../../src/control-plane/capabilities.service';
import { CONFIG_RELOAD_REFUSED, POOL_RELOAD_REFUSED } from '../../src/control-plane/control-plane.schemas';
import { DOCS_PATH, OPENAPI_PATH } from '../../src/openapi/openapi.setup';
import { TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { eventually, post } from '../support/http';
import { lifecycleWorker, startLifecycleGateway } from '../lifecycle/support';
import { checkAnswer, checkOpenApiDocument, operations, pathPattern, validate } from './openapi-check';
import { getJson, RegisteredRoute, startRecordingGateway } from './support';
import { CONFIG, openDocumentGateway } from './document-gateway';

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

// The real answers of every route against the document are in openapi-answers.e2e-spec.ts.
describe('OpenAPI document (GET /openapi.json)', () => {
  let gw: TestGateway;
  let routes: RegisteredRoute[];
  let doc: Json;
  let configFile: string;

  beforeAll(async () => {
    ({ gw, routes, doc, configFile } = await openDocumentGateway());
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
        const expected = path === '/v1/messages' || path === '/v1/messages/count_tokens' ? 'AnthropicError' : 'OpenAIError';
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
