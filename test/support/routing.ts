import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScriptedWorker } from './scripted-worker';
import { TestGateway, TEST_ADMIN_TOKEN } from './gateway';
import { admin } from './http';

/** Writes a YAML config file in a fresh temp directory and returns its path (for CONFIG_FILE). */
export function writeConfig(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'sb-routing-')), 'config.yaml');
  writeFileSync(path, yaml);
  return path;
}

export const OK_BODY = { id: 'cmpl-1', object: 'chat.completion', choices: [] };

/** Answers every request the worker receives with a 200 at once (for tests that count requests). */
export function autoRespond(worker: ScriptedWorker, body: unknown = OK_BODY): void {
  worker.ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.type === 'request') worker.complete(frame.request_id, body);
  });
}

/** `/admin/workers` entry of one worker, by the id its register_ack carried. */
export async function workerView(gw: TestGateway, workerId: string): Promise<any> {
  const res = await admin(gw.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN);
  return res.json.data.find((w: { id: string }) => w.id === workerId);
}

/** The value of one Prometheus series on /metrics (0 when absent). */
export async function metricValue(gw: TestGateway, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = line.slice(name.length).split('}')[0];
    if (wanted.every((l) => labelText.includes(l))) return Number(line.split(' ').pop());
  }
  return 0;
}
