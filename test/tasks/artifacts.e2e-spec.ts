import { DataSource } from 'typeorm';
import { JobArtifactRecorder } from '../../src/artifacts/job-artifact-recorder.service';
import { startGateway, TestGateway } from '../support/gateway';
import { post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { cancel, chatDelta, chatTask, finish, getJson, readStream, submit, TaskStream } from './support';

const CANARY = 'prompt-canary-8c1f';

/** Every task leaves a job artifact in the registry: completed, failed and cancelled ones. */
describe('task API: job artifacts in the artifact registry', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ ARTIFACTS_FLUSH_INTERVAL_SECS: '3600' });
  });
  afterAll(() => gw.close());

  const team = { 'x-tenant-id': 'team-art' };
  const body = (extra: Record<string, unknown>) => chatTask('art-m', { messages: [{ role: 'user', content: CANARY }], session_id: 'art-session', ...extra });

  it('a completed task: artifact_id on its status, the artifact holds its redacted request and the transcript a reader got', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['art-m'], max_concurrent: 4 });
    expect((await submit(gw, body({ task_id: 'art-ok', output_mode: 'json', seed: 9 }), team)).status).toBe(202);
    const req = await worker.next('request');
    worker.chunk(req.request_id, chatDelta('{"ok":') + chatDelta('true}'));
    finish(worker, req.request_id);
    const stream = new TaskStream(gw, 'art-ok', team);
    await stream.done;
    const status = await getJson(gw, '/v1/tasks/art-ok', team);
    const id = status.json.artifact_id;
    expect(id).toMatch(/^[0-9a-f]{64}$/);

    const artifact = await getJson(gw, `/v1/artifacts/${id}`, team);
    expect(artifact.status).toBe(200);
    expect(artifact.json).toMatchObject({
      kind: 'job',
      job_id: 'art-ok',
      session_id: 'art-session',
      tags: ['output_mode:json'],
      metadata: { status: 'completed', model_ref: 'art-m', tokens_out: 2 },
      content: {
        job_id: 'art-ok',
        status: 'completed',
        pool: 'local',
        seed: 9,
        max_tokens: 16,
        output_mode: 'json',
        params: { model: 'art-m', messages: '[redacted]', max_tokens: 16, task_id: 'art-ok', seed: 9 },
        transcript: { storage: 'inline', truncated: false, text: stream.text },
      },
    });
    // Another tenant does not see it; the prompt is stored nowhere.
    expect((await getJson(gw, `/v1/artifacts/${id}`, { 'x-tenant-id': 'team-other' })).status).toBe(404);
    await gw.app.get(JobArtifactRecorder).flush();
    const rows: Array<{ content: string; job_id: string }> = await gw.app
      .get(DataSource)
      .query("SELECT content, job_id FROM artifacts WHERE job_id = 'art-ok'");
    expect(rows).toHaveLength(1);
    expect(rows[0].content).not.toContain(CANARY);
    worker.close();
  });

  it("a task's tags and parents go to its artifact (listed by tag), never to the worker", async () => {
    const plan = await post(gw.url, '/v1/artifacts', { kind: 'plan', session_id: 'art-session', content: { steps: ['draft', 'review'] } }, team);
    expect(plan.status).toBe(201);
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['art-m'] });
    expect((await submit(gw, body({ task_id: 'art-lineage', tags: ['agent:writer', 'batch-7'], parents: [plan.json.id] }), team)).status).toBe(202);
    const req = await worker.next('request');
    const sent = JSON.parse(req.body);
    expect(sent).not.toHaveProperty('tags');
    expect(sent).not.toHaveProperty('parents');
    worker.chunk(req.request_id, chatDelta('done'));
    finish(worker, req.request_id);
    await new TaskStream(gw, 'art-lineage', team).done;
    const id = (await getJson(gw, '/v1/tasks/art-lineage', team)).json.artifact_id;

    await gw.app.get(JobArtifactRecorder).flush();
    const listed = await getJson(gw, '/v1/artifacts?tag=agent:writer', team);
    expect(listed.json.data.map((a: { id: string }) => a.id)).toEqual([id]);
    expect(listed.json.data[0]).toMatchObject({ kind: 'job', job_id: 'art-lineage', tags: ['agent:writer', 'batch-7'], parents: [plan.json.id] });
    worker.close();
  });

  it('failed and cancelled tasks leave one too, with their error context and partial transcript', async () => {
    const doomed = await ScriptedWorker.register(gw.workerUrl, { models: ['art-m'] });
    expect((await submit(gw, body({ task_id: 'art-fail' }), team)).status).toBe(202);
    const req = await doomed.worker.next('request');
    const reader = new TaskStream(gw, 'art-fail', team);
    doomed.worker.chunk(req.request_id, chatDelta('half'));
    await reader.until((e) => e.some((x) => x.event === 'token'));
    doomed.worker.kill();
    await reader.done;
    const failed = await getJson(gw, `/v1/artifacts/${(await getJson(gw, '/v1/tasks/art-fail', team)).json.artifact_id}`, team);
    expect(failed.json).toMatchObject({
      metadata: { status: 'failed', error_code: 'worker_disconnected', tokens_out: 1 },
      content: { status: 'failed', error: { code: 'worker_disconnected', retriable: true }, transcript: { text: reader.text } },
    });

    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['art-m'] });
    expect((await submit(gw, body({ task_id: 'art-cancel' }), team)).status).toBe(202);
    await worker.next('request');
    const cancelled = await cancel(gw, 'art-cancel', team);
    const artifact = await getJson(gw, `/v1/artifacts/${cancelled.json.artifact_id}`, team);
    expect(artifact.json).toMatchObject({
      metadata: { status: 'cancelled', error_code: 'cancelled' },
      content: { error: { code: 'cancelled', retriable: false } },
    });
    expect(artifact.json.content.transcript.text).toBe((await readStream(gw, 'art-cancel', team)).text);
    worker.close();
  });
});
