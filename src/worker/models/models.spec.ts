import { Features, LifecycleCommandMessage, WorkerToServerMessage } from '../../protocol';
import { FakeClock } from '../../../test/support/fake-clock';
import { RecordingLogger } from '../../../test/worker/support/recording-logger';
import { BackendClient } from '../requests/backend-client';
import { LifecycleHttp } from './lifecycle/backend-http';
import { LifecycleDispatcher, LifecycleLink } from './lifecycle/dispatcher';
import { CatalogOptions, ModelCatalog } from './model-catalog';
import { ModelSync, ModelsChannel } from './model-sync';
import { BackendProber, ProbeResult } from './probes/backend-prober';

const POLL_MS = 5_000;

class FakeChannel implements ModelsChannel {
  open = true;
  draining = false;
  features: ReadonlySet<string> = new Set([Features.MODEL_LIFECYCLE]);
  advertisedEndpoints?: string[];
  readonly operations = new AbortController();
  readonly frames: WorkerToServerMessage[] = [];

  constructor(private readonly clock: FakeClock) {}

  send(message: WorkerToServerMessage): boolean {
    if (!this.open) return false;
    this.frames.push(message);
    return true;
  }

  setTimer(_name: 'poll', fn: () => void, ms: number): void {
    this.clock.setTimeout(fn, ms);
  }
}

function setup(over: Partial<CatalogOptions> = {}, opts: { probe?: boolean } = {}) {
  const clock = new FakeClock();
  const log = new RecordingLogger();
  let backendModels: string[] | Error = ['a', 'b'];
  const backend = {
    listModels: jest.fn(async () => {
      if (backendModels instanceof Error) throw backendModels;
      return [...backendModels];
    }),
  } as unknown as BackendClient;
  const probes: string[][] = [];
  const prober = opts.probe
    ? ({
        probe: async (models: string[]): Promise<ProbeResult> => {
          probes.push([...models]);
          return {
            models: [...models],
            runner: { type: 'vllm', version: '0.9' },
            capabilities: Object.fromEntries(models.map((m) => [m, { vision: true, context_length: 4096 }])),
            endpoints: ['/v1/chat/completions'],
            unreachable: false,
          };
        },
      } as unknown as BackendProber)
    : undefined;
  const stop = new AbortController();
  const catalog = new ModelCatalog(
    {
      discoverModels: true,
      models: [],
      capabilities: {},
      runner: 'auto',
      modelsPollIntervalMs: POLL_MS,
      modelsTimeoutMs: 1_000,
      signal: stop.signal,
      ...over,
    },
    backend,
    {} as LifecycleHttp,
    prober,
    log,
  );
  const handled: Array<{ command: LifecycleCommandMessage; link: LifecycleLink }> = [];
  const dispatcher = { handle: async (command: LifecycleCommandMessage, link: LifecycleLink) => void handled.push({ command, link }) };
  let stopping = false;
  const channel = new FakeChannel(clock);
  const sync = new ModelSync(catalog, dispatcher as unknown as LifecycleDispatcher, {
    priority: 3,
    modelsPollIntervalMs: POLL_MS,
    current: () => channel,
    load: () => 2,
    stopping: () => stopping,
    signal: stop.signal,
    log,
  });
  return {
    clock,
    log,
    catalog,
    sync,
    channel,
    probes,
    handled,
    backend,
    setBackend: (m: string[] | Error) => (backendModels = m),
    stop: () => {
      stopping = true;
      stop.abort();
    },
  };
}

const updates = (c: FakeChannel) => c.frames.filter((f) => f.type === 'models_update');

describe('ModelCatalog', () => {
  it('registers with the backend list when discovering, and with the configured list otherwise', async () => {
    const t = setup();
    expect(t.catalog.models).toEqual([]);
    expect(await t.catalog.forRegister()).toEqual(['a', 'b']);
    const fixed = setup({ discoverModels: false, models: ['x'] });
    expect(await fixed.catalog.forRegister()).toEqual(['x']);
    expect(fixed.backend.listModels).not.toHaveBeenCalled();
  });

  it('registers without models (and says so) when the backend lists none or cannot answer', async () => {
    const t = setup();
    t.setBackend(new Error('ECONNREFUSED'));
    expect(await t.catalog.forRegister()).toEqual([]);
    expect(t.log.messages('warn')).toEqual([
      'backend model list unavailable; keeping the last known list',
      'registering without models: the backend lists none yet',
    ]);
  });

  it('lays configured capabilities over probed ones, field by field', async () => {
    const t = setup({ capabilities: { a: { vision: false } } }, { probe: true });
    await t.catalog.forRegister();
    expect(t.catalog.capabilitiesFor(['a', 'b'])).toEqual({
      a: { vision: false, context_length: 4096 },
      b: { vision: true, context_length: 4096 },
    });
    // The probe said vLLM, so lifecycle commands go to the vLLM adapter.
    expect(t.catalog.adapter().runner).toBe('vllm');
  });

  it('probes again only when the list changed, unless forced', async () => {
    const t = setup({}, { probe: true });
    await t.catalog.forRegister();
    await t.catalog.reload('changed', false);
    expect(t.probes).toEqual([['a', 'b']]);
    t.setBackend(['a']);
    await t.catalog.reload('changed', false);
    await t.catalog.reload('changed', true);
    expect(t.probes).toEqual([['a', 'b'], ['a'], ['a']]);
  });
});

describe('ModelSync (fake clock)', () => {
  it('polls the backend every interval and sends models_update only when the list changed', async () => {
    const t = setup({}, { probe: true });
    await t.catalog.forRegister();
    t.sync.schedulePoll(t.channel);
    await t.clock.advanceAsync(POLL_MS);
    expect(updates(t.channel)).toEqual([]);
    t.setBackend(['a', 'b', 'c']);
    await t.clock.advanceAsync(POLL_MS - 1);
    expect(updates(t.channel)).toEqual([]);
    await t.clock.advanceAsync(1);
    expect(updates(t.channel)).toEqual([
      {
        type: 'models_update',
        models: ['a', 'b', 'c'],
        current_load: 2,
        capabilities: expect.objectContaining({ c: { vision: true, context_length: 4096 } }),
        endpoints: ['/v1/chat/completions'],
        priority: 3,
      },
    ]);
    expect(t.channel.advertisedEndpoints).toEqual(['/v1/chat/completions']);
    expect(t.log.messages('info')).toContain('backend model list changed');
  });

  it('does not poll while the link drains, and stops polling once it closes', async () => {
    const t = setup();
    await t.catalog.forRegister();
    t.sync.schedulePoll(t.channel);
    t.channel.draining = true;
    t.setBackend(['z']);
    await t.clock.advanceAsync(POLL_MS * 3);
    expect(t.backend.listModels).toHaveBeenCalledTimes(1);
    t.channel.draining = false;
    await t.clock.advanceAsync(POLL_MS);
    expect(t.backend.listModels).toHaveBeenCalledTimes(2);
    t.channel.open = false;
    await t.clock.advanceAsync(POLL_MS * 3);
    expect(t.backend.listModels).toHaveBeenCalledTimes(2);
    expect(t.clock.pendingTimers()).toBe(0);
  });

  it('answers models_refresh with the current list even when the backend cannot answer', async () => {
    const t = setup({ discoverModels: false, models: ['x'] });
    t.setBackend(new Error('timeout'));
    await t.sync.refresh(t.channel, 'operator');
    expect(updates(t.channel)).toEqual([expect.objectContaining({ models: ['x'] })]);
    t.setBackend(['y']);
    await t.sync.refresh(t.channel);
    expect(updates(t.channel)[1]).toEqual(expect.objectContaining({ models: ['y'] }));
  });

  it('sends no models_update while stopping: the shutdown empty list must stand', async () => {
    const t = setup();
    t.stop();
    await t.sync.refresh(t.channel);
    expect(t.channel.frames).toEqual([]);
  });

  it('runs lifecycle commands only when negotiated and not stopping; a finished load refreshes the list', async () => {
    const t = setup();
    const load: LifecycleCommandMessage = { type: 'model_load', task_id: 't1', model_id: 'c' };
    t.channel.features = new Set();
    t.sync.lifecycleCommand(t.channel, load);
    expect(t.handled).toEqual([]);
    expect(t.channel.frames).toEqual([]);

    t.channel.features = new Set([Features.MODEL_LIFECYCLE]);
    t.sync.lifecycleCommand(t.channel, load);
    expect(t.handled).toHaveLength(1);
    t.setBackend(['a', 'b', 'c']);
    await t.handled[0].link.modelsChanged();
    expect(updates(t.channel)).toEqual([expect.objectContaining({ models: ['a', 'b', 'c'] })]);

    t.stop();
    t.sync.lifecycleCommand(t.channel, load);
    expect(t.handled[0].link.signal.aborted).toBe(true);
    expect(t.channel.frames[t.channel.frames.length - 1]).toEqual({
      type: 'lifecycle_status',
      task_id: 't1',
      status: 'failed',
      error: 'the worker is stopping',
    });
  });
});
