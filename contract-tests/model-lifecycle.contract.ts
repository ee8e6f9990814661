/**
 * Contract: model lifecycle under governance (model-runner spec §2–§4 and "Authentication").
 * Load, unload and cache flush need the admin token AND a `verifiedOpToken`: base64url of
 * `{"opToken": {...}, "signatures": {"<signer>": base64url Ed25519 signature}}`, each signer
 * signing the opToken as JSON with keys sorted at every level and no whitespace with their own
 * private key; the gateway holds only the signers' public keys (GOVERNANCE_SIGNERS_FILE: name →
 * base64 of the raw 32-byte key) and needs M distinct valid signatures. The token binds the
 * operation, the model and the target (workerId, pool, ...): a request that differs is refused.
 * The gateway relays the operation only to workers that negotiated `model_lifecycle`, tracks it
 * from their `lifecycle_status` reports, routes to a loaded model only after `models_update`,
 * unloads only once in-flight work has finished, and audits every attempt.
 */
import { generateKeyPairSync, KeyObject, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { httpCall, HttpResult, postJson } from './support/http';
import { spawnGateway, SpawnedGateway } from './support/server';
import { Scope } from './support/scope';
import { Frame, ScriptedWorker } from './support/worker';
import { chatBody, uniqueModel, waitUntil } from './support/util';

/** Each signer's own key pair; the gateway is told only the public halves. */
const KEYS: Record<string, KeyObject> = {};
const PUBLIC: Record<string, string> = {};
for (const name of ['alice', 'bob', 'carol']) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  KEYS[name] = privateKey;
  PUBLIC[name] = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url').toString('base64');
}
/** Not a configured signer: signs with a key the gateway does not know. */
const STRANGER = generateKeyPairSync('ed25519').privateKey;

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

interface MintOptions {
  operation: 'model-load' | 'model-unload' | 'cache-flush';
  modelId?: string;
  scope?: string;
  workerId?: string;
  pool?: string;
  quantization?: string;
  tenantId?: string;
  signers?: string[];
  issuedAt?: number;
  nonce?: string;
  /** Every signature made with a key the gateway does not know (under the signers' names). */
  forged?: boolean;
}

function mint(o: MintOptions): string {
  const opToken: Record<string, unknown> = {
    operation: o.operation,
    modelId: o.modelId,
    scope: o.scope,
    workerId: o.workerId,
    pool: o.pool,
    quantization: o.quantization,
    tenantId: o.tenantId,
    issuedAt: o.issuedAt ?? Math.floor(Date.now() / 1000),
    nonce: o.nonce ?? randomBytes(12).toString('hex'),
  };
  const signatures: Record<string, string> = {};
  for (const name of o.signers ?? ['alice', 'bob']) {
    const key = o.forged ? STRANGER : (KEYS[name] ?? STRANGER);
    signatures[name] = sign(null, Buffer.from(canonical(opToken), 'utf8'), key).toString('base64url');
  }
  return Buffer.from(JSON.stringify({ opToken, signatures })).toString('base64url');
}

/** The same token with one signer's entry written twice in the JSON (a signature must count once). */
function withDuplicateSignature(token: string, signer: string): string {
  const json = Buffer.from(token, 'base64url').toString('utf8');
  const sig = JSON.parse(json).signatures[signer];
  return Buffer.from(json.replace(`"${signer}":"${sig}"`, `"${signer}":"${sig}","${signer}":"${sig}"`)).toString('base64url');
}

/** The same token with `signer`'s signature replaced by `from`'s (valid for `from`, not for `signer`). */
function withSignatureOf(token: string, signer: string, from: string): string {
  const outer = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  outer.signatures[signer] = outer.signatures[from];
  return Buffer.from(JSON.stringify(outer)).toString('base64url');
}

describe('model lifecycle under governance', () => {
  let gw: SpawnedGateway;
  let scope: Scope;
  let keyDir: string;

  beforeAll(async () => {
    keyDir = mkdtempSync(join(tmpdir(), 'switchboard-signers-'));
    const signersFile = join(keyDir, 'signers.yaml');
    writeFileSync(
      signersFile,
      Object.entries(PUBLIC)
        .map(([name, key]) => `${name}: ${key}\n`)
        .join(''),
    );
    gw = await spawnGateway({
      label: 'lifecycle',
      env: { GOVERNANCE_SIGNERS_FILE: signersFile, GOVERNANCE_REQUIRED_SIGNERS: '2', REQUEST_TIMEOUT_SECS: '20' },
    });
  });
  beforeEach(() => {
    scope = new Scope({ baseUrl: gw.url, wsUrl: gw.wsUrl, adminToken: gw.env.ADMIN_TOKEN });
  });
  afterEach(async () => {
    await scope.cleanup();
  });
  afterAll(async () => {
    await gw.stop('SIGTERM');
    rmSync(keyDir, { recursive: true, force: true });
  });

  const workerOpts = () => ({ secret: gw.env.WORKER_SECRET, provider: gw.env.PROVIDER_NAME });

  function lifecycleWorker(models: string[], features = ['model_lifecycle']): Promise<ScriptedWorker> {
    return scope.worker({ models, max_concurrent: 2, extra: { features } }, workerOpts());
  }

  function admin(method: string, path: string, body?: unknown, token = gw.env.ADMIN_TOKEN): Promise<HttpResult> {
    return httpCall(path, {
      method,
      baseUrl: gw.url,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  const status = (worker: ScriptedWorker, taskId: string, fields: Record<string, unknown>) =>
    worker.send({ type: 'lifecycle_status', task_id: taskId, ...fields });

  test('load: 202 loading, progress relayed, listed as loading in /v1/capabilities, routed to only after the worker reports it loaded', async () => {
    const base = uniqueModel('base');
    const model = uniqueModel('new');
    const w = await lifecycleWorker([base]);
    expect(w.ack?.features).toContain('model_lifecycle');
    const res = await admin('POST', '/v1/models/load', {
      modelId: model,
      workerId: w.workerId,
      quantization: 'q4_k_m',
      verifiedOpToken: mint({ operation: 'model-load', modelId: model, workerId: w.workerId, quantization: 'q4_k_m' }),
    });
    expect(res.status).toBe(202);
    const accepted = res.json();
    expect(accepted).toMatchObject({ taskId: expect.any(String), status: 'loading', progress: 0 });
    const frame = await w.next('model_load');
    expect(frame).toMatchObject({ model_id: model, quantization: 'q4_k_m' });
    status(w, frame.task_id, { status: 'accepted' });
    status(w, frame.task_id, { status: 'loading', progress: 0.4, eta_secs: 30 });
    await waitUntil(async () => (await admin('GET', `/v1/models/load/${accepted.taskId}`)).json().progress === 0.4, 'progress 0.4');
    const caps = JSON.stringify((await httpCall('/v1/capabilities', { baseUrl: gw.url })).json());
    expect(caps).toContain('"loading"');
    expect(caps).toContain(model);
    // Not advertised yet: no request for it reaches the worker.
    const early = await postJson('/v1/chat/completions', chatBody(model), {}, gw.url).done;
    expect(early.status).toBe(404);
    expect(w.requests()).toHaveLength(0);

    w.modelsUpdate([base, model]);
    status(w, frame.task_id, { status: 'completed', progress: 1, gpu_memory_used_mb: 5120 });
    const done = await waitUntil(async () => {
      const body = (await admin('GET', `/v1/models/load/${accepted.taskId}`)).json();
      return body.status === 'completed' ? body : undefined;
    }, 'the load task to complete');
    expect(done).toMatchObject({ taskId: accepted.taskId, modelId: model, gpuMemoryUsedMB: 5120, loadTimeMs: expect.any(Number) });
    expect(JSON.stringify(done.workers)).toContain(w.workerId);

    const x = postJson('/v1/chat/completions', chatBody(model), {}, gw.url);
    const req = await w.nextRequest();
    expect(req.model).toBe(model);
    w.respondJson(req.request_id, { ok: true });
    expect((await x.done).status).toBe(200);
  });

  test('a worker without the feature never receives a lifecycle frame; its task fails as unsupported', async () => {
    const model = uniqueModel('legacy');
    const legacy = await scope.worker({ models: [uniqueModel('other')], max_concurrent: 1 }, workerOpts());
    const res = await admin('POST', '/v1/models/load', {
      modelId: model,
      workerId: legacy.workerId,
      verifiedOpToken: mint({ operation: 'model-load', modelId: model, workerId: legacy.workerId }),
    });
    if (res.status === 202) {
      const final = await waitUntil(async () => {
        const body = (await admin('GET', `/v1/models/load/${res.json().taskId}`)).json();
        return body.status === 'failed' ? body : undefined;
      }, 'the task to fail');
      expect(JSON.stringify(final.error)).toMatch(/unsupported/);
    } else {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.text).toMatch(/unsupported|model_lifecycle/);
    }
    expect(legacy.isOpen).toBe(true);
    expect(legacy.frames.map((f) => f.type)).not.toContain('model_load');
  });

  test('a worker that disconnects mid-load fails the task with worker_disconnected', async () => {
    const model = uniqueModel('gone');
    const w = await lifecycleWorker([uniqueModel('x')]);
    const { taskId } = (
      await admin('POST', '/v1/models/load', {
        modelId: model,
        workerId: w.workerId,
        verifiedOpToken: mint({ operation: 'model-load', modelId: model, workerId: w.workerId }),
      })
    ).json();
    const frame = await w.next('model_load');
    status(w, frame.task_id, { status: 'loading', progress: 0.1 });
    w.terminate();
    const final = await waitUntil(async () => {
      const body = (await admin('GET', `/v1/models/load/${taskId}`)).json();
      return body.status === 'failed' ? body : undefined;
    }, 'the task to fail');
    expect(JSON.stringify(final.error)).toMatch(/worker_disconnected/);
  });

  test('nonsense reports are dropped without ending the session; a second load of the same model on the same worker is 409 with the running task id', async () => {
    const model = uniqueModel('dup');
    const w = await lifecycleWorker([uniqueModel('y')]);
    const first = (
      await admin('POST', '/v1/models/load', {
        modelId: model,
        workerId: w.workerId,
        verifiedOpToken: mint({ operation: 'model-load', modelId: model, workerId: w.workerId }),
      })
    ).json();
    const frame = await w.next('model_load');
    status(w, frame.task_id, { status: 'loading', progress: 7 });
    status(w, frame.task_id, { status: 'teleporting' });
    status(w, 'no-such-task', { status: 'completed' });
    status(w, frame.task_id, { status: 'loading', progress: 0.25 });
    await waitUntil(async () => (await admin('GET', `/v1/models/load/${first.taskId}`)).json().progress === 0.25, 'progress 0.25');
    expect(w.isOpen).toBe(true);
    const second = await admin('POST', '/v1/models/load', {
      modelId: model,
      workerId: w.workerId,
      verifiedOpToken: mint({ operation: 'model-load', modelId: model, workerId: w.workerId }),
    });
    expect(second.status).toBe(409);
    expect(second.text).toContain(first.taskId);
  });

  test('unload takes the model out of routing, waits for its in-flight request, then unloads; the stream is not cut', async () => {
    const model = uniqueModel('unload');
    const w = await lifecycleWorker([model]);
    const stream = postJson('/v1/chat/completions', chatBody(model, { stream: true }), {}, gw.url);
    const req = await w.nextRequest();
    w.chunk(req.request_id, 'data: {"choices":[{"delta":{"content":"part one"}}]}\n\n');
    await stream.waitForText((t) => t.includes('part one'));
    const unload = admin('POST', '/v1/models/unload', {
      modelId: model,
      workerId: w.workerId,
      verifiedOpToken: mint({ operation: 'model-unload', modelId: model, workerId: w.workerId }),
    });
    // Out of routing at once: a new request for the model does not reach this worker.
    await waitUntil(async () => {
      const probe = postJson('/v1/chat/completions', chatBody(model), {}, gw.url);
      const res = await Promise.race([probe.done, new Promise<undefined>((r) => setTimeout(() => r(undefined), 300))]);
      probe.abort();
      return res === undefined || res.status !== 200;
    }, 'the model to leave routing');
    expect(w.requests()).toHaveLength(1);
    expect(w.all('model_unload')).toHaveLength(0);
    w.chunk(req.request_id, 'data: {"choices":[{"delta":{"content":" part two"}}]}\n\ndata: [DONE]\n\n');
    w.complete(req.request_id);
    const streamed = await stream.done;
    expect(streamed.text).toContain('part two');
    const frame = await w.next('model_unload');
    expect(frame.model_id).toBe(model);
    status(w, frame.task_id, { status: 'completed', gpu_memory_freed_mb: 2048 });
    const answered = await unload;
    expect(answered.status).toBe(200);
    expect(answered.json()).toMatchObject({ modelId: model, gpuMemoryFreedMB: 2048, kvCacheFlushed: expect.any(Boolean) });
  });

  test('cache flush relays the scope and aggregates the workers answers', async () => {
    const w = await lifecycleWorker([uniqueModel('flush')]);
    const flush = admin('POST', '/v1/cache/flush', {
      scope: 'tenant',
      tenantId: 'acme',
      workerId: w.workerId,
      verifiedOpToken: mint({ operation: 'cache-flush', scope: 'tenant', tenantId: 'acme', workerId: w.workerId }),
    });
    const frame: Frame = await w.next('cache_flush');
    expect(frame).toMatchObject({ scope: 'tenant', tenant_id: 'acme' });
    status(w, frame.task_id, { status: 'completed', entries_removed: 12, memory_freed_mb: 300 });
    const res = await flush;
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({ flushed: true, entriesRemoved: 12, memoryFreedMB: 300 });
    const incomplete = await admin('POST', '/v1/cache/flush', {
      scope: 'model',
      workerId: w.workerId,
      verifiedOpToken: mint({ operation: 'cache-flush', scope: 'model' }),
    });
    // A body that is JSON but misses a field the scope needs: refused like other admin bodies, naming the field.
    expect([400, 422]).toContain(incomplete.status);
    expect(incomplete.text).toContain('modelId');
    expect(w.all('cache_flush')).toHaveLength(1);
  });

  test('governance: each refusal is distinct; replay, skew, unknown or too few signers, wrong operation, bad signature, malformed token; all audited', async () => {
    const model = uniqueModel('gov');
    const w = await lifecycleWorker([uniqueModel('z')]);
    const load = (token: string, adminToken?: string) =>
      admin('POST', '/v1/models/load', { modelId: model, workerId: w.workerId, verifiedOpToken: token }, adminToken);
    const codeOf = (r: HttpResult) => r.json().error?.code as string;

    const tok = (o: Partial<MintOptions> = {}) => mint({ operation: 'model-load', modelId: model, workerId: w.workerId, ...o });
    expect((await load(tok(), 'not-the-admin-token')).status).toBe(401);
    const malformed = await load('definitely not a token');
    expect(malformed.status).toBe(400);
    const refusals: Array<[string, HttpResult]> = [
      ['signature', await load(tok({ forged: true }))],
      ['stale', await load(tok({ issuedAt: Math.floor(Date.now() / 1000) - 6 * 60 }))],
      ['future', await load(tok({ issuedAt: Math.floor(Date.now() / 1000) + 6 * 60 }))],
      ['operation', await load(tok({ operation: 'model-unload' }))],
      ['model', await load(tok({ modelId: `${model}-other` }))],
      ['duplicate signature', await load(withDuplicateSignature(tok({ signers: ['alice'] }), 'alice'))],
      ['unknown signer', await load(tok({ signers: ['alice', 'bob', 'mallory'] }))],
      ['too few', await load(tok({ signers: ['alice'] }))],
      ['target', await load(tok({ workerId: 'w-another-worker' }))],
      ['one signature bad', await load(withSignatureOf(tok({ signers: ['alice', 'bob'] }), 'bob', 'alice'))],
    ];
    for (const [why, res] of refusals) {
      expect([why, res.status]).toEqual([why, expect.any(Number)]);
      expect([401, 403]).toContain(res.status);
    }
    const codes = refusals.map(([, r]) => codeOf(r));
    // signature, clock window, operation mismatch and signer problems are told apart.
    expect(new Set([codes[0], codes[1], codes[3], codes[6], codes[7]]).size).toBe(5);
    // A signature counts once however often it is written; a token for another worker is not this one's;
    // M valid signatures do not excuse a bad one.
    expect(codes[5]).toBe(codes[7]);
    expect(codes[8]).toBe(codes[3]);
    expect(codes[9]).toBe(codes[0]);

    const token = tok({ nonce: `n-${randomBytes(6).toString('hex')}` });
    expect((await load(token)).status).toBe(202);
    const replay = await load(token);
    expect([401, 403]).toContain(replay.status);
    expect(new Set([...codes, codeOf(replay)]).size).toBeGreaterThan(new Set(codes).size);

    const audit = await admin('GET', '/admin/audit');
    expect(audit.status).toBe(200);
    const text = audit.text;
    expect(text).toContain(model);
    expect(text).not.toContain(gw.env.ADMIN_TOKEN);
    const rows: any[] = audit.json().data ?? audit.json().entries ?? audit.json().items ?? [];
    const mine = rows.filter((r) => JSON.stringify(r).includes(model));
    expect(mine.length).toBeGreaterThanOrEqual(refusals.length + 2);
    expect((await admin('GET', '/admin/audit', undefined, '')).status).toBe(401);
  });

  test('unknown worker or pool is 404', async () => {
    const model = uniqueModel('nf');
    const noWorker = await admin('POST', '/v1/models/load', {
      modelId: model,
      workerId: 'w-does-not-exist',
      verifiedOpToken: mint({ operation: 'model-load', modelId: model, workerId: 'w-does-not-exist' }),
    });
    expect(noWorker.status).toBe(404);
    const noPool = await admin('POST', '/v1/models/load', {
      modelId: model,
      pool: 'no-such-pool',
      verifiedOpToken: mint({ operation: 'model-load', modelId: model, pool: 'no-such-pool' }),
    });
    expect(noPool.status).toBe(404);
    expect((await admin('GET', '/v1/models/load/no-such-task')).status).toBe(404);
  });
});
