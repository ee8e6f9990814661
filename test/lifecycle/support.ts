import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintOpToken, OpTokenClaims } from '../../src/governance/op-token';
import type { CreateAppOptions } from '../../src/bootstrap';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { admin, eventually, RawResponse } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';

export const KEY = 'lifecycle-test-hmac-key';
export const SIGNERS = ['alice', 'bob', 'carol'];

export interface LifecycleGateway extends TestGateway {
  keyFile: string;
  /** A fresh token for the operation, signed by alice and bob unless said otherwise, issued now. */
  token(claims: Partial<OpTokenClaims> & Pick<OpTokenClaims, 'operation'>): string;
  /** POST with the admin token. */
  call(path: string, body: unknown): Promise<RawResponse>;
  get(path: string): Promise<RawResponse>;
}

/** A gateway with model lifecycle enabled: a key file (mode 600), signers alice, bob, carol, 2 required. */
export async function startLifecycleGateway(env: Record<string, string> = {}, options: CreateAppOptions & { keyFileMode?: number } = {}): Promise<LifecycleGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-lifecycle-'));
  const keyFile = join(dir, 'model-api.key');
  writeFileSync(keyFile, `${KEY}\n`, { mode: options.keyFileMode ?? 0o600 });
  const gw = await startGateway({ VERIFIED_OP_TOKEN_KEY_PATH: keyFile, GOVERNANCE_SIGNERS: SIGNERS.join(','), GOVERNANCE_REQUIRED_SIGNERS: '2', ...env }, options);
  return {
    ...gw,
    keyFile,
    token: (claims) => mintOpToken(Buffer.from(KEY), { signers: ['alice', 'bob'], issuedAt: Math.floor(Date.now() / 1000), ...claims }),
    call: (path, body) => admin(gw.url, 'POST', path, TEST_ADMIN_TOKEN, body),
    get: (path) => admin(gw.url, 'GET', path, TEST_ADMIN_TOKEN),
    async close() {
      await gw.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A worker that negotiated model_lifecycle (unless `features` says otherwise). */
export async function lifecycleWorker(
  gw: TestGateway,
  models: string[],
  extra: { features?: string[]; max_concurrent?: number; worker_name?: string; runner_capabilities?: Record<string, unknown>; provider?: string; secret?: string } = {},
): Promise<{ worker: ScriptedWorker; id: string }> {
  const { provider, secret, ...register } = extra;
  const { worker, ack } = await ScriptedWorker.register(
    gw.workerUrl,
    { models, max_concurrent: 4, features: ['model_lifecycle'], ...register },
    { ...(provider ? { provider } : {}), ...(secret ? { secret } : {}) },
  );
  return { worker, id: ack.worker_id as string };
}

/** The worker answers a lifecycle command. */
export function report(worker: ScriptedWorker, taskId: string, status: string, extra: Record<string, unknown> = {}): void {
  worker.send({ type: 'lifecycle_status', task_id: taskId, status, ...extra });
}

/** Audit rows (newest first) matching a query string. */
export async function auditRows(gw: LifecycleGateway, query = ''): Promise<any[]> {
  const res = await gw.get(`/admin/audit${query ? `?${query}` : ''}`);
  if (res.status !== 200) throw new Error(`GET /admin/audit: ${res.status} ${res.text}`);
  return res.json.data;
}

export const POOL_SECRET = 'lifecycle-pool-secret';

/** A provider of its own, so a test's pool-wide choices see only its workers. */
export async function createPool(gw: LifecycleGateway, name: string, settings: Record<string, unknown> = {}): Promise<string> {
  const res = await admin(gw.url, 'POST', '/admin/providers', TEST_ADMIN_TOKEN, { name, secret: POOL_SECRET, ...settings });
  if (res.status !== 201) throw new Error(`creating pool ${name}: ${res.status} ${res.text}`);
  return name;
}

/** Polls `GET /v1/models/load/:taskId` until `check` holds; answers that body. */
export async function taskWhen(gw: LifecycleGateway, taskId: string, check: (task: any) => boolean): Promise<any> {
  let task: any;
  await eventually(async () => {
    task = (await gw.get(`/v1/models/load/${taskId}`)).json;
    return check(task);
  });
  return task;
}
