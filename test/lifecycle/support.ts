import { generateKeyPairSync, KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BoundClaims, LifecycleOperation, OpTokenClaims } from '../../src/governance/op-token';
import { addSignature, publicKeyText, unsignedToken } from '../../src/governance/op-token-ed25519';
import type { CreateAppOptions } from '../../src/bootstrap';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { admin, eventually, RawResponse } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';

export const SIGNERS = ['alice', 'bob', 'carol'];
/** Each signer's own Ed25519 key pair (the gateway is given only the public keys). */
export const SIGNER_KEYS: Record<string, { privateKey: KeyObject; publicKey: KeyObject }> = Object.fromEntries(
  SIGNERS.map((name) => [name, generateKeyPairSync('ed25519')]),
);
/** Someone who is not a configured signer. */
export const MALLORY = generateKeyPairSync('ed25519');

/**
 * An Ed25519 token for `claims` (issued now), signed by `claims.signers` (default alice and bob)
 * with their own keys; a name that is not a configured signer signs with mallory's key.
 */
export function signedToken(claims: Partial<OpTokenClaims> & Pick<OpTokenClaims, 'operation'>): string {
  const { signers = ['alice', 'bob'], ...rest } = claims;
  let token = unsignedToken({ issuedAt: Math.floor(Date.now() / 1000), ...rest });
  for (const name of signers) token = addSignature(token, name, (SIGNER_KEYS[name] ?? MALLORY).privateKey);
  return token;
}

const BOUND: ReadonlyArray<keyof BoundClaims> = [
  'modelId',
  'evictModel',
  'pool',
  'workerId',
  'replicas',
  'quantization',
  'gpuMemoryBudgetMB',
  'maxContextLength',
  'scope',
  'tenantId',
  'tag',
];

/** The claims a request body needs its token to bind (null counts as absent, as the gateway reads it). */
export function claimsOf(operation: LifecycleOperation, body: Record<string, unknown>): BoundClaims {
  const claims: Record<string, unknown> = { operation };
  for (const field of BOUND) if (body[field] !== undefined && body[field] !== null) claims[field] = body[field];
  return claims as unknown as BoundClaims;
}

export interface LifecycleGateway extends TestGateway {
  /** The GOVERNANCE_SIGNERS_FILE of the gateway (alice, bob, carol). */
  signersFile: string;
  /** A fresh token for exactly these claims, signed by alice and bob unless said otherwise, issued now. */
  token(claims: Partial<OpTokenClaims> & Pick<OpTokenClaims, 'operation'>): string;
  /** A fresh token binding exactly what `body` asks (plus `extra` claims: signers, nonce, issuedAt). */
  tokenFor(operation: LifecycleOperation, body: Record<string, unknown>, extra?: Partial<OpTokenClaims>): string;
  /** POST with the admin token. */
  call(path: string, body: unknown): Promise<RawResponse>;
  get(path: string): Promise<RawResponse>;
}

/** A gateway with model lifecycle enabled: signers alice, bob, carol (public keys in a signers file), 2 required. */
export async function startLifecycleGateway(env: Record<string, string> = {}, options: CreateAppOptions = {}): Promise<LifecycleGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-lifecycle-'));
  const signersFile = join(dir, 'signers.yaml');
  writeFileSync(signersFile, SIGNERS.map((name) => `${name}: ${publicKeyText(SIGNER_KEYS[name].publicKey)}\n`).join(''));
  const gw = await startGateway({ GOVERNANCE_SIGNERS_FILE: signersFile, GOVERNANCE_REQUIRED_SIGNERS: '2', ...env }, options);
  return {
    ...gw,
    signersFile,
    token: signedToken,
    tokenFor: (operation, body, extra = {}) => signedToken({ ...claimsOf(operation, body), ...extra }),
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
  extra: {
    features?: string[];
    max_concurrent?: number;
    worker_name?: string;
    runner_capabilities?: Record<string, unknown>;
    provider?: string;
    secret?: string;
  } = {},
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
