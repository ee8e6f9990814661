import { Logger } from '@nestjs/common';
import { FakeClock } from '../../test/support/fake-clock';
import type { WorkerSession } from '../fleet/worker-session';
import { SettlingHolds } from './settling-holds';

const TIMEOUT_MS = 600_000;

describe('SettlingHolds', () => {
  let clock: FakeClock;
  let released: string[];
  let refreshed: number;
  let holds: SettlingHolds;
  const worker = (models: string[]) => ({ id: 'w-1', wildcard: false, models: new Set(models) }) as unknown as WorkerSession;

  beforeEach(() => {
    clock = new FakeClock();
    released = [];
    refreshed = 0;
    const log = new Logger('test');
    jest.spyOn(log, 'warn').mockImplementation(() => undefined);
    jest.spyOn(log, 'log').mockImplementation(() => undefined);
    holds = new SettlingHolds(
      (_w, models) => released.push(...models),
      () => refreshed++,
      clock,
      TIMEOUT_MS,
      log,
    );
  });

  it('a worker that never says anything after a timeout gets the model back at the settle timeout, not before', () => {
    const w = worker(['m']);
    holds.afterTimeout(w, 'unload-1', ['m']);
    holds.onModelsUpdate(w); // still lists it: no word on the outcome
    clock.advance(TIMEOUT_MS - 1);
    expect(released).toEqual([]);
    clock.advance(1);
    expect(released).toEqual(['m']);
    expect(holds.onStatus(w, 'unload-1', 'failed')).toBe(false); // settled: a later frame is not for it
  });

  it('a worker that does not answer the models_refresh after a completed unload gets the model back at the settle timeout', () => {
    const w = worker(['m']);
    holds.afterCompleted(w, 'unload-2', ['m']);
    expect(refreshed).toBe(1);
    clock.advance(TIMEOUT_MS);
    expect(released).toEqual(['m']);
  });

  it('a model the worker no longer advertises is released at once, and nothing is asked', () => {
    holds.afterCompleted(worker([]), 'unload-3', ['m']);
    expect(released).toEqual(['m']);
    expect(refreshed).toBe(0);
  });

  it('a new operation on the model takes the hold over: the old one never releases it', () => {
    const w = worker(['m']);
    holds.afterTimeout(w, 'unload-4', ['m']);
    holds.takeOver(w, 'm');
    clock.advance(TIMEOUT_MS);
    expect(holds.onStatus(w, 'unload-4', 'failed')).toBe(false);
    expect(released).toEqual([]);
  });

  it('a worker that left leaves nothing behind', () => {
    const w = worker(['m']);
    holds.afterTimeout(w, 'unload-5', ['m']);
    holds.forget(w);
    clock.advance(TIMEOUT_MS);
    expect(released).toEqual([]);
  });
});
