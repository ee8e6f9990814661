import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { admin, RawResponse } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { parsePrometheusText } from '../observability/prometheus-text';

/** A YAML config file in a fresh temporary directory; returns its path. */
export function configFile(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'sb-keys-cfg-')), 'switchboard.yaml');
  writeFileSync(path, yaml);
  return path;
}

export function adminCall(gw: TestGateway, method: string, path: string, body?: unknown): Promise<RawResponse> {
  return admin(gw.url, method, path, TEST_ADMIN_TOKEN, body);
}

/** POST /admin/keys; fails the test unless it answers 201. */
export async function createKey(gw: TestGateway, body: Record<string, unknown>): Promise<{ id: string; key: string } & Record<string, any>> {
  const res = await adminCall(gw, 'POST', '/admin/keys', body);
  if (res.status !== 201) throw new Error(`POST /admin/keys answered ${res.status}: ${res.text}`);
  return res.json;
}

export const chatCompletion = (model: string) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model,
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
});

export const anthropicMessage = (model: string) => ({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model,
  content: [{ type: 'text', text: 'hello' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 1, output_tokens: 1 },
});

/** Answers the worker's next request frame with `body` and returns that frame. */
export async function answerNext(worker: ScriptedWorker, body: (model: string) => unknown): Promise<Record<string, any>> {
  const frame = await worker.next('request');
  worker.complete(frame.request_id, body(JSON.parse(frame.body).model));
  return frame;
}

/** Current values of switchboard_client_auth_failures_total by reason. */
export async function clientAuthFailures(gw: TestGateway): Promise<Record<string, number>> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const family = parsePrometheusText(text).get('switchboard_client_auth_failures_total');
  if (!family) throw new Error('switchboard_client_auth_failures_total is not exposed');
  return Object.fromEntries(family.samples.map((s) => [s.labels.reason, s.value]));
}
