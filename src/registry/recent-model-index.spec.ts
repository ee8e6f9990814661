import { RecentModelIndex } from './recent-model-index';

describe('RecentModelIndex', () => {
  const WINDOW = 1000;
  let index: RecentModelIndex;

  beforeEach(() => {
    index = new RecentModelIndex(WINDOW);
  });

  it('knows a connected worker’s models for as long as it stays connected', () => {
    index.connected('w1', 'p', ['a', 'b']);
    expect(index.knows('p', 'a', 10_000_000)).toBe(true);
    expect(index.knows('p', 'c', 0)).toBe(false);
    expect(index.knows('other', 'a', 0)).toBe(false);
  });

  it('keeps a disconnected worker for the window, inclusive, then forgets it', () => {
    index.connected('w1', 'p', ['a']);
    index.disconnected('w1', 5000);
    expect(index.knows('p', 'a', 5000 + WINDOW)).toBe(true);
    expect(index.knows('p', 'a', 5000 + WINDOW + 1)).toBe(false);
  });

  it('treats `*` as every model', () => {
    index.connected('w1', 'p', ['*']);
    expect(index.knows('p', 'anything', 0)).toBe(true);
  });

  it('replaces models on change', () => {
    index.connected('w1', 'p', ['a']);
    index.modelsChanged('w1', ['b']);
    expect(index.knows('p', 'a', 0)).toBe(false);
    expect(index.knows('p', 'b', 0)).toBe(true);
  });

  it('does not let a past sighting override a live connection or a later sighting', () => {
    index.connected('w1', 'p', ['a']);
    index.seen('w1', 'p', ['old'], 0);
    expect(index.isConnected('w1')).toBe(true);
    expect(index.knows('p', 'a', 0)).toBe(true);

    index.seen('w2', 'p', ['x'], 500);
    index.seen('w2', 'p', ['y'], 100);
    expect(index.knows('p', 'x', 1500)).toBe(true);
    expect(index.knows('p', 'y', 1500)).toBe(false);
  });

  it('moves a worker that reconnects under another provider', () => {
    index.connected('w1', 'p', ['a']);
    index.connected('w1', 'q', ['a']);
    expect(index.knows('p', 'a', 0)).toBe(false);
    expect(index.knows('q', 'a', 0)).toBe(true);
    expect(index.size()).toBe(1);
  });

  it('prunes expired workers but keeps connected and recent ones', () => {
    index.connected('live', 'p', ['a']);
    index.seen('recent', 'p', ['a'], 900);
    index.seen('expired', 'p', ['a'], 0);
    index.prune(1500);
    expect(index.size()).toBe(2);
    expect(index.isConnected('live')).toBe(true);
  });
});
