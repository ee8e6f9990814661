import { CloseInfo, ScriptedWorker, ScriptedWorkerOptions } from '../support/scripted-worker';
import { TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { admin, RawResponse } from '../support/http';

export const OK_BODY = { id: 'cmpl-1', object: 'chat.completion', choices: [] };

/** An admin call with the test token. */
export function call(gw: TestGateway, method: string, path: string, body?: unknown): Promise<RawResponse> {
  return admin(gw.url, method, path, TEST_ADMIN_TOKEN, body);
}

/** The same route without a token and with a wrong one: both must be 401 `unauthorized`. */
export async function withoutToken(gw: TestGateway, method: string, path: string): Promise<number[]> {
  const none = await fetch(`${gw.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{}' });
  const noneBody = (await none.json()) as { error: { code: string } };
  const wrong = await admin(gw.url, method, path, 'not-the-token', method === 'GET' ? undefined : {});
  expect(noneBody.error.code).toBe('unauthorized');
  expect(wrong.json.error.code).toBe('unauthorized');
  return [none.status, wrong.status];
}

/**
 * Connects and sends a register frame, then resolves with how the gateway closed the socket: for
 * registrations that are expected to be refused (a registered worker would wait forever).
 */
export async function refusedRegistration(
  gw: TestGateway,
  register: { worker_name: string; models: string[] },
  options: ScriptedWorkerOptions = {},
): Promise<{ close: CloseInfo; frames: string[] }> {
  const worker = await ScriptedWorker.connect(gw.workerUrl, options);
  worker.send({ type: 'register', protocol_version: '2026-04-bridge-v1', max_concurrent: 1, current_load: 0, ...register });
  const close = await worker.closed;
  return { close, frames: worker.frames.map((f) => f.type) };
}

/** Creates a second pool through the admin API and returns the options its workers connect with. */
export async function createPool(gw: TestGateway, name: string): Promise<ScriptedWorkerOptions> {
  const secret = `${name}-secret-123`;
  const res = await call(gw, 'POST', '/admin/providers', { name, secret });
  expect(res.status).toBe(201);
  return { provider: name, secret };
}
