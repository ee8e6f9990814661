import { FakeClock } from '../../test/support/fake-clock';
import { dispatchHarness, RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { JobArtifactInput, JobArtifacts } from '../artifacts/job-artifacts.port';
import { AppConfig, loadConfig } from '../config';
import { Dispatcher } from '../dispatch/dispatcher.service';
import { CancelMessage } from '../protocol';
import { MemoryRateLimiter } from '../rate-limit/memory-rate-limiter';
import { WorkerSession } from '../fleet/worker-session';
import { Fleet } from '../fleet/fleet.service';
import { TenantLimits } from '../tenancy/tenant-limits.service';
import { TenantsService } from '../tenancy/tenants.service';
import { InMemorySessionBudgets } from './session-budgets';
import { TaskReader } from './task';
import { TaskEventLog } from './task-events';
import { TaskRuntime } from './task-runtime';
import { SingleProcessMembership } from '../cluster/single-process-membership';
import { LocalTaskLocator } from './task-locator';
import { TasksService } from './tasks.service';

/** The artifact port's test double: remembers every call and answers a content-like id. */
class RecordedArtifacts implements JobArtifacts {
  readonly calls: JobArtifactInput[] = [];
  recordJob(input: JobArtifactInput): string {
    this.calls.push(input);
    return `sha256:${this.calls.length}`;
  }
}

class Reader implements TaskReader {
  text = '';
  ended = false;
  replay(log: TaskEventLog, afterId: number) {
    this.text += log.since(afterId);
  }
  write(t: string) {
    this.text += t;
  }
  comment(t: string) {
    this.text += t;
  }
  end() {
    this.ended = true;
  }
}

const chunk = (t: string) => `data: {"choices":[{"delta":{"content":${JSON.stringify(t)}}}]}\n\n`;

describe('tasks over the dispatcher (fake clock)', () => {
  let clock: FakeClock;
  let config: AppConfig;
  let dispatcher: Dispatcher;
  let fleet: Fleet;
  let runtime: TaskRuntime;
  let tasks: TasksService;
  let artifacts: RecordedArtifacts;
  let limiter: MemoryRateLimiter;
  let seq = 0;

  beforeEach(async () => {
    clock = new FakeClock();
    config = loadConfig({ PROVIDER_NAME: 'local', TASKS_RETENTION_SECS: '60', TASKS_POSITION_INTERVAL_SECS: '1', TASKS_KEEPALIVE_SECS: '15' });
    config.providers[0].models = ['m'];
    const harness = await dispatchHarness(config, clock);
    dispatcher = harness.dispatcher;
    fleet = harness.fleet;
    const { queue, metrics } = harness;
    const tenants = new TenantsService(config);
    limiter = new MemoryRateLimiter(clock);
    artifacts = new RecordedArtifacts();
    const budgets = new InMemorySessionBudgets(config.tasks.sessionTtlMs);
    runtime = new TaskRuntime(config, clock, dispatcher, queue, fleet, budgets, artifacts);
    runtime.onModuleInit();
    tasks = new TasksService(
      config,
      clock,
      dispatcher,
      tenants,
      new TenantLimits(limiter, tenants, metrics, clock),
      runtime,
      new LocalTaskLocator(),
      budgets,
      new SingleProcessMembership('gw', '1', 0, () => clock.now()),
    );
  });
  afterEach(() => {
    runtime.onModuleDestroy();
    limiter.close();
  });

  function addWorker(maxConcurrent = 1): { worker: WorkerSession; channel: RecordingChannel } {
    const channel = new RecordingChannel();
    const id = `w-${++seq}`;
    const worker = workerSession(id, 'local', id, ['m'], maxConcurrent, '127.0.0.1', clock.now(), channel);
    worker.runner = { type: 'vllm', version: '0.6.3' };
    fleet.attach(worker);
    return { worker, channel };
  }

  const identity = { tenant: 'default', priority: 1 as const };
  function submit(body: Record<string, unknown>) {
    const answer = tasks.submit(
      { identity, headers: {}, correlationId: 'corr' },
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'top secret prompt' }], max_tokens: 8, ...body }),
    );
    if (answer instanceof Promise) throw new Error('the in-memory limiter answers synchronously');
    return answer;
  }
  const requestIds = (c: RecordingChannel) => c.sent.filter((m) => m.type === 'request').map((m) => (m as { request_id: string }).request_id);
  const cancels = (c: RecordingChannel) => c.sent.filter((m): m is CancelMessage => m.type === 'cancel');

  it('a completed task records its artifact once: redacted params, engine, metrics and the transcript a reader got', () => {
    const { worker, channel } = addWorker();
    const created = clock.now();
    const answer = submit({ task_id: 'job-1', session_id: 'sess', ctx: 2048, seed: 42, output_mode: 'json', temperature: 0.5 });
    expect(answer.status).toBe(202);
    const task = runtime.find('default', 'job-1')!;
    const reader = new Reader();
    task.attach(reader, 0);
    const [requestId] = requestIds(channel);
    clock.advance(1500);
    dispatcher.frames.onChunk(worker, requestId, chunk('Hello') + chunk(' there'));
    clock.advance(500);
    dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: requestId, status_code: 200, body: '' });

    expect(reader.ended).toBe(true);
    expect(artifacts.calls).toEqual([
      {
        jobId: 'job-1',
        sessionId: 'sess',
        tenant: 'default',
        params: {
          model: 'm',
          messages: '[redacted]',
          max_tokens: 8,
          task_id: 'job-1',
          session_id: 'sess',
          ctx: 2048,
          seed: 42,
          output_mode: 'json',
          temperature: 0.5,
        },
        maxTokens: 8,
        ctx: 2048,
        engine: 'vllm',
        engineVersion: '0.6.3',
        modelRef: 'm',
        pool: 'local',
        seed: 42,
        outputMode: 'json',
        status: 'completed',
        tokensOut: 2,
        decodeTimeMs: 2000,
        transcript: reader.text,
        createdAt: created,
      },
    ]);
    expect(reader.text).toContain('event: end\ndata: {"tokens_out":2,"decode_time_ms":2000,"decode_ms":2000}');
    expect(JSON.stringify(artifacts.calls)).not.toContain('top secret prompt');
    // Kept for its retention, a finished task holds no copy of the prompt.
    expect(task.relay).toBeUndefined();
    expect(JSON.stringify(task.request)).not.toContain('top secret prompt');
    expect(tasks.status(identity, 'job-1')).toMatchObject({ status: 'completed', artifact_id: 'sha256:1' });
    // Cancelling it afterwards records nothing more.
    tasks.cancel(identity, 'job-1');
    expect(artifacts.calls).toHaveLength(1);
  });

  it('a failed task records its artifact with the error, the partial transcript and the context its worker advertised', () => {
    const { worker, channel } = addWorker();
    worker.capabilities = { m: { context_length: 8192 } };
    submit({ task_id: 'job-2' });
    const [requestId] = requestIds(channel);
    dispatcher.frames.onChunk(worker, requestId, chunk('partial'));
    fleet.detach(worker);
    expect(artifacts.calls).toHaveLength(1);
    const [input] = artifacts.calls;
    expect(input).toMatchObject({
      jobId: 'job-2',
      status: 'failed',
      tokensOut: 1,
      ctx: 8192,
      engine: 'vllm',
      error: { code: 'worker_disconnected', message: 'The worker disconnected during the response', retriable: true },
    });
    expect(input.transcript).toContain('event: token\ndata: {"t":"partial","i":0}');
    expect(input.transcript).toMatch(/event: error\ndata: \{"code":"worker_disconnected"/);
  });

  it('a task cancelled while queued records its artifact (never ran: no engine), once however often it is cancelled', () => {
    addWorker();
    submit({ task_id: 'running' });
    expect(submit({ task_id: 'waiting' }).body).toMatchObject({ queue_position: 1, predicted_start_ms: null });
    tasks.cancel(identity, 'waiting');
    tasks.cancel(identity, 'waiting');
    expect(artifacts.calls).toHaveLength(1);
    expect(artifacts.calls[0]).toMatchObject({
      jobId: 'waiting',
      status: 'cancelled',
      tokensOut: 0,
      decodeTimeMs: 0,
      error: { code: 'cancelled', retriable: false },
    });
    expect(artifacts.calls[0]).toMatchObject({ ctx: null, engine: null, engineVersion: null });
  });

  it('repeats started while queued only when it changes, sends : keepalive every 15 s while queued, and prunes after the retention', () => {
    const { worker, channel } = addWorker();
    submit({ task_id: 'a' });
    submit({ task_id: 'b' });
    const reader = new Reader();
    runtime.find('default', 'b')!.attach(reader, 0);
    clock.advance(14_999);
    expect(reader.text.match(/event: started/g)).toHaveLength(1);
    expect(reader.text).not.toContain(': keepalive');
    clock.advance(1);
    expect(reader.text.match(/: keepalive\n\n/g)).toHaveLength(1);
    dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: requestIds(channel)[0], status_code: 200, body: '' });
    // b starts: started {0, 0}; no keepalive once it runs.
    expect(reader.text).toContain('event: started\ndata: {"queue_position":0,"predicted_start_ms":0}');
    clock.advance(30_000);
    expect(reader.text.match(/: keepalive\n\n/g)).toHaveLength(1);
    dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: requestIds(channel)[1], status_code: 200, body: '' });
    expect(tasks.status(identity, 'b')).toMatchObject({ status: 'completed' });
    clock.advance(59_999);
    expect(runtime.find('default', 'b')).toBeDefined();
    clock.advance(1_000);
    expect(tasks.status(identity, 'b')).toMatchObject({ code: 'not_found' });
  });

  it("waits and runs by the tasks' own bounds (an hour each by default), not the pool's 30 s queue and 300 s request timeouts", () => {
    const { worker, channel } = addWorker();
    submit({ task_id: 'first' });
    submit({ task_id: 'patient' });
    clock.advance(30 * 60_000);
    expect(tasks.status(identity, 'patient')).toMatchObject({ status: 'queued', error: null });
    worker.lastSeenAt = clock.now(); // its pongs kept arriving (a silent worker gets no new work)
    dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: requestIds(channel)[0], status_code: 200, body: '' });
    expect(tasks.status(identity, 'patient')).toMatchObject({ status: 'running' });
    const started = clock.now();
    submit({ task_id: 'never' });
    clock.advance(3_600_000 - 1);
    expect(tasks.status(identity, 'patient')).toMatchObject({ status: 'running', error: null });
    expect(tasks.status(identity, 'never')).toMatchObject({ status: 'queued' });
    clock.advance(1);
    expect(clock.now() - started).toBe(config.tasks.maxRunMs);
    expect(tasks.status(identity, 'patient')).toMatchObject({ status: 'failed', error: { code: 'request_timeout' } });
    expect(cancels(channel)).toEqual([{ type: 'cancel', request_id: requestIds(channel)[1], reason: 'timeout' }]);
    // The third task waited its hour in the queue behind it.
    expect(tasks.status(identity, 'never')).toMatchObject({ status: 'failed', error: { code: 'queue_timeout' } });
  });

  it('forgets the oldest finished tasks before their retention once they hold tasks.max_retained_bytes together', () => {
    const { worker, channel } = addWorker();
    const run = (id: string) => {
      submit({ task_id: id });
      const requestId = requestIds(channel).at(-1)!;
      dispatcher.frames.onChunk(worker, requestId, chunk(`answer of ${id}`));
      dispatcher.frames.onComplete(worker, { type: 'response_complete', request_id: requestId, status_code: 200, body: '' });
    };
    run('t1');
    const footprint = runtime.find('default', 't1')!.footprint;
    expect(footprint).toBeGreaterThan(1024);
    config.tasks.maxRetainedBytes = Math.floor(3.5 * footprint);
    for (const id of ['t2', 't3', 't4', 't5']) run(id);
    // Well within their retention, the two oldest are gone: the three newest fit.
    expect(tasks.status(identity, 't1')).toMatchObject({ code: 'not_found' });
    expect(tasks.status(identity, 't2')).toMatchObject({ code: 'not_found' });
    for (const id of ['t3', 't4', 't5']) expect(tasks.status(identity, id)).toMatchObject({ status: 'completed' });
    // Their ids are free again.
    expect(submit({ task_id: 't1' }).status).toBe(202);
  });

  it("the session's time budget counts the running time of all its tasks: two at once spend it twice as fast", () => {
    const { channel } = addWorker(2);
    submit({ task_id: 'x', session_id: 'pair', budget: { time_secs: 10 } });
    submit({ task_id: 'y', session_id: 'pair', budget: { time_secs: 10 } });
    clock.advance(4_000);
    expect(tasks.status(identity, 'x')).toMatchObject({ status: 'running' });
    clock.advance(1_000);
    expect(tasks.status(identity, 'x')).toMatchObject({ status: 'cancelled', error: { code: 'session_budget_exceeded', check: 'session_time' } });
    expect(tasks.status(identity, 'y')).toMatchObject({ status: 'cancelled' });
    expect(cancels(channel).map((c) => c.reason)).toEqual(['timeout', 'timeout']);
    // Its 10 s are spent: the session takes no more tasks.
    expect(submit({ session_id: 'pair', budget: { time_secs: 10 } })).toMatchObject({
      status: 429,
      body: { error: { code: 'session_budget_exceeded', check: 'session_time' } },
    });
  });

  it('no token is published once cancel has returned, even from chunks the worker had already sent', () => {
    const { worker, channel } = addWorker();
    submit({ task_id: 'race' });
    const reader = new Reader();
    runtime.find('default', 'race')!.attach(reader, 0);
    const [requestId] = requestIds(channel);
    dispatcher.frames.onChunk(worker, requestId, chunk('one'));
    const view = tasks.cancel(identity, 'race') as { tokens_out: number; last_event_id: number };
    expect(dispatcher.frames.onChunk(worker, requestId, chunk('two'))).toBe('ok');
    expect(view.tokens_out).toBe(1);
    expect(reader.text.match(/event: token/g)).toHaveLength(1);
    expect(reader.text.endsWith('event: error\ndata: {"code":"cancelled","message":"The task was cancelled by its client","retriable":false}\n\n')).toBe(true);
    expect(cancels(channel)).toEqual([{ type: 'cancel', request_id: requestId, reason: 'client_disconnect' }]);
  });
});
