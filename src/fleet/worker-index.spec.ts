import { RecordingChannel, workerSession } from '../../test/support/dispatch-harness';
import { WorkerIndex } from './worker-index';
import { WorkerSession } from './worker-session';

function session(id: string, provider: string, models: string[]): WorkerSession {
  return workerSession(id, provider, id, models, 1, '10.0.0.1', 0, new RecordingChannel());
}

describe('WorkerIndex', () => {
  it('indexes workers by id, provider and exact model; wildcard workers apart', () => {
    const index = new WorkerIndex();
    const a = session('a', 'p', ['m', 'n']);
    const b = session('b', 'q', ['m']);
    const star = session('s', 'p', ['*', 'n']);
    for (const w of [a, b, star]) index.add(w);
    expect(index.get('a')).toBe(a);
    expect(index.count()).toBe(3);
    expect([...index.all()]).toEqual([a, b, star]);
    expect([...index.ofProvider('p')]).toEqual([a, star]);
    expect(index.ofProvider('none').size).toBe(0);
    expect([...index.servingExactly('m')]).toEqual([a, b]);
    expect([...index.servingExactly('n')]).toEqual([a, star]);
    expect(index.servingExactly('other').size).toBe(0);
    expect([...index.wildcardWorkers()]).toEqual([star]);
    expect([...index.advertisedModels()].sort()).toEqual(['m', 'n']);
  });

  it('remove forgets the worker everywhere; a different session under the same id is not removed', () => {
    const index = new WorkerIndex();
    const a = session('a', 'p', ['*', 'm']);
    index.add(a);
    expect(index.remove(session('a', 'p', ['m']))).toBe(false);
    expect(index.get('a')).toBe(a);
    expect(index.remove(a)).toBe(true);
    expect(index.remove(a)).toBe(false);
    expect(index.count()).toBe(0);
    expect(index.ofProvider('p').size).toBe(0);
    expect(index.servingExactly('m').size).toBe(0);
    expect(index.wildcardWorkers().size).toBe(0);
    expect([...index.advertisedModels()]).toEqual([]);
  });

  it('setModels keeps the model index in step (also for an unregistered worker)', () => {
    const index = new WorkerIndex();
    const a = session('a', 'p', ['m']);
    index.add(a);
    index.setModels(a, ['n', '*']);
    expect(index.servingExactly('m').size).toBe(0);
    expect([...index.servingExactly('n')]).toEqual([a]);
    expect([...index.wildcardWorkers()]).toEqual([a]);
    expect(a.advertisedModels()).toEqual(['n', '*']);
    const loose = session('x', 'p', ['m']);
    index.setModels(loose, ['k']);
    expect([...loose.models]).toEqual(['k']);
    expect(index.servingExactly('k').size).toBe(0);
  });

  it('holdOut takes a model out of routing on one worker until releaseHold; a model no longer advertised stays out', () => {
    const index = new WorkerIndex();
    const a = session('a', 'p', ['m', 'n']);
    const b = session('b', 'p', ['m']);
    index.add(a);
    index.add(b);
    index.holdOut(a, 'm');
    expect([...index.servingExactly('m')]).toEqual([b]);
    expect(a.isHeldOut('m')).toBe(true);
    // A models_update while held out does not put it back.
    index.setModels(a, ['m', 'n']);
    expect([...index.servingExactly('m')]).toEqual([b]);
    index.releaseHold(a, 'm');
    expect(a.isHeldOut('m')).toBe(false);
    expect([...index.servingExactly('m')].sort((x, y) => x.id.localeCompare(y.id))).toEqual([a, b]);

    index.holdOut(a, 'n');
    expect(index.servingExactly('n').size).toBe(0);
    index.setModels(a, ['m']);
    index.releaseHold(a, 'n');
    expect(a.isHeldOut('n')).toBe(false);
    expect(index.servingExactly('n').size).toBe(0);
  });
});
