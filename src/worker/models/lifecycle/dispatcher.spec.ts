import { LifecycleCommandMessage, LifecycleStatusMessage } from '../../../protocol';
import { createLogger } from '../../logger';
import { LifecycleHttp } from './backend-http';
import { LifecycleDispatcher, LifecycleLink } from './dispatcher';
import { Figures, LifecycleAdapter, OperationContext, OperationFailed, Unsupported } from './types';

/** An adapter whose operations the test finishes by hand. */
class ScriptedAdapter implements LifecycleAdapter {
  readonly runner = 'ollama' as const;
  readonly started: Array<{ command: LifecycleCommandMessage; ctx: OperationContext; finish: (f: Figures | Error) => void }> = [];

  load = (command: LifecycleCommandMessage, ctx: OperationContext) => this.start(command, ctx);
  unload = (command: LifecycleCommandMessage, ctx: OperationContext) => this.start(command, ctx);
  flush = (command: LifecycleCommandMessage, ctx: OperationContext) => this.start(command, ctx);

  private start(command: LifecycleCommandMessage, ctx: OperationContext): Promise<Figures> {
    return new Promise((resolve, reject) => {
      this.started.push({ command, ctx, finish: (f) => (f instanceof Error ? reject(f) : resolve(f)) });
    });
  }
}

function setup(timeoutMs = 60_000) {
  const adapter = new ScriptedAdapter();
  const lines: Array<Record<string, unknown>> = [];
  const dispatcher = new LifecycleDispatcher({
    log: createLogger({ level: 'debug', write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) }),
    http: {} as LifecycleHttp,
    adapter: () => adapter,
    timeoutMs,
    pollMs: 10,
    progressIntervalMs: 0,
  });
  const frames: Array<LifecycleStatusMessage | { type: 'models_update' }> = [];
  const abort = new AbortController();
  const link: LifecycleLink = {
    send: (m) => frames.push(m),
    signal: abort.signal,
    modelsChanged: async () => {
      frames.push({ type: 'models_update' });
    },
  };
  return { adapter, dispatcher, frames, link, abort, lines };
}

const load = (task: string, model: string, extra: object = {}): LifecycleCommandMessage => ({ type: 'model_load', task_id: task, model_id: model, ...extra });

describe('LifecycleDispatcher', () => {
  it('answers accepted at once, relays progress, and after a load re-reads the models before reporting completed with the figures', async () => {
    const { adapter, dispatcher, frames, link } = setup();
    const done = dispatcher.handle(load('t1', 'llama3'), link);
    expect(frames).toEqual([{ type: 'lifecycle_status', task_id: 't1', status: 'accepted' }]);
    adapter.started[0].ctx.progress(0.5, 12);
    adapter.started[0].finish({ gpu_memory_used_mb: 4096 });
    await done;
    expect(frames).toEqual([
      { type: 'lifecycle_status', task_id: 't1', status: 'accepted' },
      { type: 'lifecycle_status', task_id: 't1', status: 'loading', progress: 0.5, eta_secs: 12 },
      { type: 'models_update' },
      { type: 'lifecycle_status', task_id: 't1', status: 'completed', gpu_memory_used_mb: 4096 },
    ]);
  });

  it('does not re-read the models after a cache flush', async () => {
    const { adapter, dispatcher, frames, link } = setup();
    const done = dispatcher.handle({ type: 'cache_flush', task_id: 'f', scope: 'all' }, link);
    adapter.started[0].finish({ entries_removed: 3 });
    await done;
    expect(frames.map((f) => (f.type === 'lifecycle_status' ? f.status : f.type))).toEqual(['accepted', 'completed']);
    expect(frames.at(-1)).toMatchObject({ entries_removed: 3 });
  });

  it('refuses a second operation on a model that is busy (the evicted one included) and frees the model when the first ends', async () => {
    const { adapter, dispatcher, frames, link } = setup();
    const first = dispatcher.handle(load('t1', 'big', { evict_model: 'small' }), link);
    await dispatcher.handle({ type: 'model_unload', task_id: 't2', model_id: 'small' }, link);
    // The same task id again: any status for it would be read as the running t1's outcome, so none is sent.
    await dispatcher.handle(load('t1', 'other'), link);
    expect(frames.slice(1)).toEqual([
      {
        type: 'lifecycle_status',
        task_id: 't2',
        status: 'failed',
        error: 'another lifecycle operation (task t1) is already running for model "small" on this worker; retry when it has finished',
      },
    ]);
    // Other models are not held up.
    const flush = dispatcher.handle({ type: 'cache_flush', task_id: 't3', scope: 'model', model_id: 'third' }, link);
    expect(adapter.started).toHaveLength(2);
    adapter.started[0].finish({});
    adapter.started[1].finish({});
    await Promise.all([first, flush]);
    const again = dispatcher.handle({ type: 'model_unload', task_id: 't4', model_id: 'small' }, link);
    expect(adapter.started).toHaveLength(3);
    adapter.started[2].finish({});
    await again;
  });

  it('reports unsupported and failed with the reason, without the governance token in it', async () => {
    const { adapter, dispatcher, frames, link, lines } = setup();
    const token = 'eyJvcFRva2VuIjp7fX0.secret-token';
    const a = dispatcher.handle({ type: 'cache_flush', task_id: 'u', scope: 'tenant', tenant_id: 'x', verified_op_token: token }, link);
    const b = dispatcher.handle(load('f', 'm', { verified_op_token: token }), link);
    adapter.started[0].finish(new Unsupported('no tenant-scoped cache here'));
    adapter.started[1].finish(new OperationFailed(`backend said: bad token ${token}`));
    await Promise.all([a, b]);
    expect(frames.filter((f) => f.type === 'lifecycle_status' && f.status !== 'accepted')).toEqual([
      { type: 'lifecycle_status', task_id: 'u', status: 'unsupported', error: 'no tenant-scoped cache here' },
      { type: 'lifecycle_status', task_id: 'f', status: 'failed', error: 'backend said: bad token [redacted]' },
    ]);
    expect(JSON.stringify(lines)).not.toContain(token);
    expect(frames.some((f) => f.type === 'models_update')).toBe(false);
  });

  it('refuses commands it cannot carry out before asking the backend', async () => {
    const { adapter, dispatcher, frames, link } = setup();
    await dispatcher.handle({ type: 'cache_flush', task_id: 'a', scope: 'model' }, link);
    await dispatcher.handle({ type: 'cache_flush', task_id: 'b', scope: 'tag' }, link);
    await dispatcher.handle(load('c', 'm', { evict_model: 'm' }), link);
    await dispatcher.handle(load('d', ' '), link);
    expect(adapter.started).toHaveLength(0);
    expect(frames.map((f) => (f as LifecycleStatusMessage).error)).toEqual([
      'cache_flush with scope "model" needs model_id',
      'cache_flush with scope "tag" needs tag',
      'evict_model names the model to load',
      'model_id is empty',
    ]);
  });

  it('fails an operation that outlives its deadline, or whose gateway link dropped', async () => {
    const { adapter, dispatcher, frames, link } = setup(50);
    const slow = dispatcher.handle(load('slow', 'm'), link);
    // The adapter polls until aborted, as the real ones do.
    await expect(
      adapter.started[0].ctx.pause().then(async () => {
        for (;;) await adapter.started[0].ctx.pause();
      }),
    ).rejects.toThrow('aborted');
    adapter.started[0].finish(new Error('aborted'));
    await slow;
    expect(frames.at(-1)).toEqual({ type: 'lifecycle_status', task_id: 'slow', status: 'failed', error: 'timed out after 0.05 s (--lifecycle-timeout)' });

    const other = setup();
    const cut = other.dispatcher.handle(load('cut', 'm'), other.link);
    other.abort.abort();
    other.adapter.started[0].finish(new Error('aborted'));
    await cut;
    expect(other.frames.at(-1)).toMatchObject({ status: 'failed', error: 'interrupted: the worker lost its gateway link or is stopping' });
  });
  it('reports failed instead of rejecting when the operation cannot even be set up (a deadline no timer can hold)', async () => {
    const { dispatcher, frames, link, lines } = setup(5e9);
    await expect(dispatcher.handle(load('t9', 'llama3'), link)).resolves.toBeUndefined();
    expect(frames).toEqual([
      { type: 'lifecycle_status', task_id: 't9', status: 'accepted' },
      { type: 'lifecycle_status', task_id: 't9', status: 'failed', error: expect.stringContaining('internal error') },
    ]);
    expect(lines.some((l) => l.msg === 'lifecycle operation crashed')).toBe(true);
    // The model is free again for the next operation.
    void dispatcher.handle(load('t10', 'llama3'), link);
    expect(frames.at(-1)).toMatchObject({ task_id: 't10', status: 'accepted' });
  });
});
