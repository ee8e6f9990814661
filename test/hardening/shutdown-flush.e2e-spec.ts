import Database from 'better-sqlite3';
import { BuiltPackage, buildPackage } from '../cli/built-package';
import { chat, eventually, post, sleep } from '../support/http';
import type { TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chatDelta, chatTask, finish, getJson, submit } from '../tasks/support';
import { GatewayProcess, startGatewayProcess } from './process-support';

/**
 * Issue 16, L3: a second SIGTERM used to exit at once, losing the write-behind queues: usage rows
 * of answered requests and job artifacts whose ids clients already held. It now writes them first
 * (within SHUTDOWN_FLUSH_TIMEOUT_SECS), then exits 1, against the real compiled gateway process.
 */
describe('a second SIGTERM during the drain', () => {
  let pkg: BuiltPackage;
  let gw: GatewayProcess | undefined;
  beforeAll(() => {
    pkg = buildPackage();
  }, 240_000);
  afterAll(async () => {
    await gw?.remove();
    pkg?.remove();
  });

  it('still writes the usage rows and job artifacts clients were answered about, then exits without waiting for the drain', async () => {
    gw = await startGatewayProcess(pkg, {
      // Nothing is written behind before the shutdown: only the flush can put the rows there.
      USAGE_FLUSH_INTERVAL_SECS: '3600',
      ARTIFACTS_FLUSH_INTERVAL_SECS: '3600',
      SHUTDOWN_DRAIN_TIMEOUT_SECS: '600',
      SHUTDOWN_FLUSH_TIMEOUT_SECS: '30',
    });
    const asGateway = { url: gw.url } as TestGateway;
    const team = { 'x-tenant-id': 'team-sd' };
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['sd-model'], max_concurrent: 8 });

    // 1. An answered request: its usage row is acknowledged data.
    const answered = post(gw.url, '/v1/chat/completions', chat('sd-model'), team);
    worker.complete((await worker.next('request')).request_id, { choices: [] }, 200, { token_counts: { prompt_tokens: 3, completion_tokens: 4 } });
    expect((await answered).status).toBe(200);

    // 2. A finished task: the client holds its artifact id.
    expect((await submit(asGateway, chatTask('sd-model', { task_id: 'sd-task' }), team)).status).toBe(202);
    const taskReq = await worker.next('request');
    worker.chunk(taskReq.request_id, chatDelta('done'));
    finish(worker, taskReq.request_id);
    const artifactId = await eventually(async () => (await getJson(asGateway, '/v1/tasks/sd-task', team)).json?.artifact_id as string | undefined, 10_000);
    expect(artifactId).toMatch(/^[0-9a-f]{64}$/);

    // 3. A request the worker never answers keeps the drain waiting (600 s).
    const stuck = post(gw.url, '/v1/chat/completions', chat('sd-model'), team).catch(() => undefined);
    await worker.next('request');

    gw.run.child.kill('SIGTERM');
    await eventually(async () => (await fetch(`${gw!.url}/health/ready`).catch(() => undefined))?.status !== 200, 10_000);
    await sleep(300);
    const secondAt = Date.now();
    gw.run.child.kill('SIGTERM');
    const exit = await gw.run.exit;
    expect(exit.code).toBe(1);
    expect(Date.now() - secondAt).toBeLessThan(30_000);
    expect(gw.run.stderr()).toContain('SIGTERM again: writing pending data (up to 30 s), then exiting without waiting for the drain');
    await stuck;

    const db = new Database(gw.dbPath, { readonly: true });
    try {
      const usage = db.prepare("SELECT status, prompt_tokens, completion_tokens FROM usage_records WHERE tenant = 'team-sd' AND status = 200").all();
      expect(usage).toEqual(expect.arrayContaining([{ status: 200, prompt_tokens: 3, completion_tokens: 4 }]));
      const artifacts = db.prepare("SELECT id FROM artifacts WHERE tenant = 'team-sd'").all() as Array<{ id: string }>;
      expect(artifacts.map((a) => a.id)).toContain(artifactId);
    } finally {
      db.close();
    }
    worker.close();
  }, 120_000);
});
