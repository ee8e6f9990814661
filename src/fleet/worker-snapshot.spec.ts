import { RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { WorkerIndex } from './worker-index';
import { capabilitiesOf, servesModel, toSnapshotData } from './worker-snapshot';

describe('WorkerSnapshot', () => {
  const session = (models: string[], capabilities?: Parameters<typeof workerSession>[8], endpoints?: string[], priority?: number) =>
    workerSession('w-1', 'p', 'gpu-1', models, 4, '10.0.0.1', 1_000, new RecordingChannel(), capabilities, endpoints, priority);

  it('toSnapshotData is plain JSON: it survives a round trip unchanged', () => {
    const w = session(['m', '*'], { m: { vision: true, context_length: 8192 }, '*': { tools: true } }, ['/v1/chat/completions'], 2);
    w.replica = 'replica-1';
    w.lastSeenAt = 5_000;
    w.externalLoad = 1;
    new WorkerIndex().holdOut(w, 'm');
    const health = { consecutive_failures: 2, ejected_until: 0, latency_ms: 85 };
    const data = toSnapshotData(w, health);
    expect(JSON.parse(JSON.stringify(data))).toEqual(data);
    expect(data).toEqual({
      id: 'w-1',
      name: 'gpu-1',
      provider: 'p',
      replica: 'replica-1',
      models: ['m', '*'],
      held_out: ['m'],
      capabilities: { m: { vision: true, context_length: 8192 }, '*': { tools: true } },
      endpoints: ['/v1/chat/completions'],
      priority: 2,
      max_concurrent: 4,
      load: 1,
      draining: false,
      connected_at: 1_000,
      last_seen_at: 5_000,
      health,
    });
  });

  it('toSnapshotData writes undeclared endpoints and priority as null', () => {
    const data = toSnapshotData(session(['m']));
    expect(data).toMatchObject({ endpoints: null, priority: null, held_out: [], capabilities: {} });
    expect(JSON.parse(JSON.stringify(data))).toEqual(data);
  });

  it('servesModel: advertised by name or through `*`, unless held out', () => {
    const named = session(['m']);
    const star = session(['*']);
    expect(servesModel(named, 'm')).toBe(true);
    expect(servesModel(named, 'n')).toBe(false);
    expect(servesModel(star, 'n')).toBe(true);
    named.setHeldOut('m', true);
    star.setHeldOut('n', true);
    expect(servesModel(named, 'm')).toBe(false);
    expect(servesModel(star, 'n')).toBe(false);
  });

  it('capabilitiesOf: own declarations with `*` folded in, `*` alone for models served through it', () => {
    const w = session(['m', 'plain', '*'], { m: { vision: true }, '*': { tools: true } });
    expect(capabilitiesOf(w, 'm')).toEqual({ vision: true, tools: true });
    expect(capabilitiesOf(w, 'plain')).toEqual({ tools: true });
    expect(capabilitiesOf(w, 'other')).toEqual({ tools: true });
    expect(capabilitiesOf(session(['m']), 'm')).toBeUndefined();
  });
});
