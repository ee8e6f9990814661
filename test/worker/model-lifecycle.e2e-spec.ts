import { WorkerDaemonOptions } from '../../src/worker/daemon';
import { ProbeAnswer, gate } from './support/fake-backend';
import { Frame, GatewayConnection } from './support/fake-gateway';
import { FakeLlamaRouter, FakeOllama, FakeRunnerApi, FakeVllm } from './support/fake-lifecycle';
import { requestFrame, useWorkerHarness, within } from './support/harness';

/**
 * The daemon carrying out the gateway's model_load / model_unload / cache_flush on its backend:
 * the lifecycle_status sequence, the models_update that follows a load or unload, negotiation,
 * --runner, and that none of it holds up or breaks request relaying.
 */
describe('worker daemon: model lifecycle', () => {
  const { env, startWorker } = useWorkerHarness();
  const FEATURES = ['response_start', 'cancel_reasons', 'model_lifecycle'];
  // Every progress change is reported (no 1 s throttle) and polls are quick: the tests wait on frames, never on time.
  const fast: WorkerDaemonOptions = { lifecyclePollMs: 5, lifecycleProgressIntervalMs: 0, lifecycleRequestTimeoutMs: 2_000 };
  const FINAL = ['completed', 'failed', 'unsupported'];

  beforeEach(() => {
    env.gateway.ackFeatures = FEATURES;
  });

  async function registered(n = 1): Promise<{ conn: GatewayConnection; register: Frame }> {
    const conn = await env.gateway.connection(n);
    const register = await conn.next('register');
    return { conn, register };
  }

  const final = (conn: GatewayConnection, taskId: string) => conn.next('lifecycle_status', (f) => f.task_id === taskId && FINAL.includes(f.status as string));

  /** The task's frames and the models_update frames, in the order they arrived. */
  const story = (conn: GatewayConnection, taskId: string) =>
    conn.frames
      .filter((f) => f.task_id === taskId || f.type === 'models_update')
      .map((f) => (f.type === 'models_update' ? `models_update ${JSON.stringify(f.models)}` : f.status));

  it('with Ollama: pulls and loads a model — accepted, loading with progress, models_update with the model, then completed', async () => {
    const ollama = new FakeOllama(env.backend, { 'llama3:latest': 5_000_000_000 });
    ollama.pulls.set('qwen2.5:7b', { layers: [{ digest: 'sha256:0123456789abcdef0123', total: 4_000_000_000 }] });
    startWorker({ probe: true, discoverModels: true, models: [] }, fast);
    const { conn, register } = await registered();
    expect(register.features).toEqual([...FEATURES, 'gpu_time']);
    expect(register.models).toEqual(['llama3:latest']);

    conn.send({ type: 'model_load', task_id: 'load-1', model_id: 'qwen2.5:7b', verified_op_token: 'op-token' });
    const done = await final(conn, 'load-1');

    expect(done).toEqual({ type: 'lifecycle_status', task_id: 'load-1', status: 'completed', gpu_memory_used_mb: Math.round(4_000_000_000 / (1 << 20)) });
    const steps = story(conn, 'load-1');
    expect(steps[0]).toBe('accepted');
    expect(steps.slice(-2)).toEqual(['models_update ["llama3:latest","qwen2.5:7b"]', 'completed']);
    const loading = conn.frames.filter((f) => f.task_id === 'load-1' && f.status === 'loading').map((f) => f.progress as number);
    expect(loading).toEqual([0, 0.225, 0.45, 0.675, 0.9]);
    expect(ollama.generated).toEqual([{ model: 'qwen2.5:7b', keep_alive: -1, stream: false }]);
  });

  it('keeps relaying requests while a load runs', async () => {
    const ollama = new FakeOllama(env.backend, { 'llama3:latest': 1 });
    const download = gate();
    ollama.pulls.set('big:70b', { layers: [{ digest: 'sha256:0123456789abcdef0123', total: 100 }], gate: download.until });
    startWorker({ models: ['llama3:latest'], runner: 'ollama' }, fast);
    const { conn } = await registered();

    conn.send({ type: 'model_load', task_id: 'slow', model_id: 'big:70b' });
    await conn.next('lifecycle_status', (f) => f.task_id === 'slow' && f.status === 'accepted');
    const request = requestFrame({ model: 'llama3:latest' });
    conn.send(request);
    expect(await conn.final(request.request_id)).toMatchObject({ type: 'response_complete', status_code: 200 });
    expect(conn.frames.some((f) => f.task_id === 'slow' && FINAL.includes(f.status as string))).toBe(false);

    download.open();
    expect((await final(conn, 'slow')).status).toBe('completed');
  });

  it('refuses a second operation on a model while one runs, and takes it again once that one has finished', async () => {
    const ollama = new FakeOllama(env.backend, { 'llama3:latest': 1 });
    const download = gate();
    ollama.pulls.set('big:70b', { layers: [{ digest: 'sha256:0123456789abcdef0123', total: 100 }], gate: download.until });
    startWorker({ models: ['llama3:latest'], runner: 'ollama' }, fast);
    const { conn } = await registered();

    conn.send({ type: 'model_load', task_id: 'first', model_id: 'big:70b' });
    await conn.next('lifecycle_status', (f) => f.task_id === 'first' && f.status === 'accepted');
    conn.send({ type: 'model_unload', task_id: 'second', model_id: 'big:70b' });
    expect(await final(conn, 'second')).toEqual({
      type: 'lifecycle_status',
      task_id: 'second',
      status: 'failed',
      error: 'another lifecycle operation (task first) is already running for model "big:70b" on this worker; retry when it has finished',
    });
    download.open();
    expect((await final(conn, 'first')).status).toBe('completed');
    conn.send({ type: 'model_unload', task_id: 'third', model_id: 'big:70b' });
    expect(await final(conn, 'third')).toMatchObject({ status: 'completed', gpu_memory_freed_mb: 0 });
    expect(story(conn, 'second')).not.toContain('accepted');
  });

  it('does not carry out lifecycle commands when the gateway did not accept the feature', async () => {
    env.gateway.ackFeatures = ['response_start', 'cancel_reasons'];
    const ollama = new FakeOllama(env.backend, { 'llama3:latest': 1 });
    const worker = startWorker({ models: ['llama3:latest'], runner: 'ollama' }, fast);
    const { conn } = await registered();

    conn.send({ type: 'model_unload', task_id: 'nope', model_id: 'llama3:latest' });
    conn.send({ type: 'ping', timestamp_unix_ms: 1 });
    await conn.next('pong');
    expect(conn.frames.filter((f) => f.type === 'lifecycle_status')).toEqual([]);
    expect(ollama.generated).toEqual([]);
    expect(worker.logs).toContainEqual(
      expect.objectContaining({ level: 'warn', msg: expect.stringContaining('without negotiating model_lifecycle'), task_id: 'nope' }),
    );
  });

  it('with --no-model-lifecycle does not ask for the feature', async () => {
    startWorker({ modelLifecycle: false }, fast);
    const { register } = await registered();
    expect(register.features).toEqual(['response_start', 'cancel_reasons', 'gpu_time']);
  });

  it('answers unsupported, with why, for a backend that has no lifecycle API', async () => {
    startWorker({ probe: true }, fast);
    const { conn } = await registered();
    conn.send({ type: 'cache_flush', task_id: 'f1', scope: 'all' });
    const done = await final(conn, 'f1');
    expect(done.status).toBe('unsupported');
    expect(done.error).toMatch(/detected as a plain OpenAI-compatible server.*--runner/);
    expect(story(conn, 'f1')).toEqual(['accepted', 'unsupported']);
  });

  it('--runner vllm without probing: unload puts vLLM to sleep and leaves its model out of models_update, load wakes it and brings it back', async () => {
    const vllm = new FakeVllm(env.backend, 'llama3.1-8b');
    startWorker({ probe: false, discoverModels: true, models: [], runner: 'vllm' }, fast);
    const { conn, register } = await registered();
    expect(register.models).toEqual(['llama3.1-8b']);

    conn.send({ type: 'model_unload', task_id: 'u', model_id: 'llama3.1-8b' });
    expect((await final(conn, 'u')).status).toBe('completed');
    expect(vllm.sleeping).toBe(true);
    expect(story(conn, 'u')).toEqual(['accepted', 'models_update []', 'completed']);

    conn.send({ type: 'model_load', task_id: 'l', model_id: 'llama3.1-8b' });
    expect((await final(conn, 'l')).status).toBe('completed');
    expect(vllm.sleeping).toBe(false);
    expect(story(conn, 'l').slice(-2)).toEqual(['models_update ["llama3.1-8b"]', 'completed']);
    expect(env.backend.requests.map((r) => r.path)).toEqual(expect.arrayContaining(['/sleep', '/wake_up']));
  });

  it('llama-server router without autoload: advertises loaded models only, loads one with progress, flushes slots without a models_update', async () => {
    const router = new FakeLlamaRouter(env.backend, {
      small: { state: 'loaded', slots: [10, 5] },
      big: { loadScript: [{ state: 'downloading', done: 1, total: 2 }, { state: 'loading' }, { state: 'loaded' }] },
    });
    router.autoload = false;
    startWorker({ probe: true, discoverModels: true, models: [] }, fast);
    const { conn, register } = await registered();
    expect(register.runner).toEqual({ type: 'llama-server', version: 'b6500-1a2b3c4d' });
    expect(register.models).toEqual(['small']);

    conn.send({ type: 'model_load', task_id: 'l', model_id: 'big' });
    expect((await final(conn, 'l')).status).toBe('completed');
    expect(story(conn, 'l')).toEqual(['accepted', 'loading', 'loading', 'models_update ["small","big"]', 'completed']);
    expect(conn.frames.filter((f) => f.task_id === 'l' && f.status === 'loading').map((f) => f.progress)).toEqual([0.45, 0.9]);

    conn.send({ type: 'cache_flush', task_id: 'f', scope: 'model', model_id: 'small' });
    expect(await final(conn, 'f')).toEqual({ type: 'lifecycle_status', task_id: 'f', status: 'completed', entries_removed: 15 });
    expect(conn.frames.filter((f) => f.type === 'models_update')).toHaveLength(1);
  });

  it('keeps advertising its models when the backend cannot say which it can serve (a failing /is_sleeping, a router without a model list)', async () => {
    new FakeVllm(env.backend, 'llama3.1-8b');
    let answer: ProbeAnswer = { status: 500, json: { error: { message: 'engine dead?', code: 500 } } };
    env.backend.routes.set('GET /is_sleeping', () => answer);
    startWorker({ probe: false, discoverModels: true, models: [], runner: 'vllm' }, fast);
    const first = await registered();
    expect(first.register.models).toEqual(['llama3.1-8b']);
    answer = 'destroy';
    first.conn.send({ type: 'models_refresh' });
    expect((await first.conn.next('models_update')).models).toEqual(['llama3.1-8b']);
  });

  it('a llama-server router without autoload whose GET /models lists nothing still advertises what /v1/models lists', async () => {
    const router = new FakeLlamaRouter(env.backend, { small: { state: 'loaded' }, big: { state: 'unloaded' } });
    router.autoload = false;
    env.backend.routes.set('GET /models', () => ({ status: 200, json: { object: 'list' } }));
    startWorker({ probe: true, discoverModels: true, models: [] }, fast);
    const { register } = await registered();
    expect(register.runner).toMatchObject({ type: 'llama-server' });
    expect(register.models).toEqual(['small', 'big']);
  });

  it('a runner-API backend gets the operation as is, token included; the token never reaches the log', async () => {
    const token = 'eyJvcFRva2VuIjp7Im9wZXJhdGlvbiI6Im1vZGVsLWxvYWQifX0.c2lnbmF0dXJl';
    const runner = new FakeRunnerApi(env.backend, ['small'], token);
    const worker = startWorker({ probe: true, discoverModels: true, models: [] }, fast);
    const { conn } = await registered();

    conn.send({ type: 'model_load', task_id: 'l', model_id: 'meta-llama/Llama-3.1-70B-Instruct', gpu_memory_budget_mb: 40000, verified_op_token: token });
    expect(await final(conn, 'l')).toEqual({ type: 'lifecycle_status', task_id: 'l', status: 'completed', gpu_memory_used_mb: 38500 });
    expect(story(conn, 'l')).toEqual(['accepted', 'loading', 'loading', 'loading', 'models_update ["small","meta-llama/Llama-3.1-70B-Instruct"]', 'completed']);
    expect(runner.received[0].body).toEqual({ modelId: 'meta-llama/Llama-3.1-70B-Instruct', gpuMemoryBudgetMB: 40000, verifiedOpToken: token });

    conn.send({ type: 'model_unload', task_id: 'u', model_id: 'small', verified_op_token: 'not-the-token' });
    expect(await final(conn, 'u')).toEqual({
      type: 'lifecycle_status',
      task_id: 'u',
      status: 'failed',
      error: 'POST /v1/models/unload answered 401: verifiedOpToken signature invalid',
    });
    expect(worker.rawLogs.join('')).not.toContain(token);
    expect(worker.rawLogs.join('')).not.toContain('not-the-token');
  });

  it('fails an operation whose backend is down with a short error, and the session goes on', async () => {
    startWorker({ backendUrl: 'http://127.0.0.1:1', models: ['m'], runner: 'ollama' }, fast);
    const { conn } = await registered();
    conn.send({ type: 'model_unload', task_id: 'u', model_id: 'm' });
    const done = await final(conn, 'u');
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/^GET \/api\/ps: backend http:\/\/127\.0\.0\.1:1 unreachable: connect ECONNREFUSED/);
    conn.send({ type: 'ping', timestamp_unix_ms: 2 });
    expect(await conn.next('pong')).toMatchObject({ type: 'pong', timestamp_unix_ms: 2 });
    expect(env.gateway.connections).toHaveLength(1);
  });

  it('stops an operation whose gateway link dropped: the download is cancelled and nothing about it reaches the next session', async () => {
    const ollama = new FakeOllama(env.backend, { 'llama3:latest': 1 });
    ollama.pulls.set('big:70b', { layers: [{ digest: 'sha256:0123456789abcdef0123', total: 100 }], gate: gate().until });
    startWorker({ models: ['llama3:latest'], runner: 'ollama' }, fast);
    const { conn } = await registered();
    conn.send({ type: 'model_load', task_id: 'cut', model_id: 'big:70b' });
    await conn.next('lifecycle_status', (f) => f.task_id === 'cut' && f.status === 'accepted');
    for (let i = 0; i < 100 && !env.backend.requests.some((r) => r.path === '/api/pull'); i++) await new Promise((r) => setTimeout(r, 5));
    const pull = env.backend.requests.find((r) => r.path === '/api/pull');
    expect(pull).toBeDefined();

    conn.ws.terminate();
    await within(pull!.closedEarly, 'the pull to be cancelled');
    const { conn: next } = await registered(2);
    next.send({ type: 'ping', timestamp_unix_ms: 3 });
    await next.next('pong');
    expect(next.frames.filter((f) => f.type === 'lifecycle_status')).toEqual([]);
    expect(ollama.generated).toEqual([]);
  });
});
