import { BusSync } from './bus-sync';
import { HandBus } from '../../test/support/hand-bus';
import { BUS_TOPICS } from './cluster-bus.port';

interface Row {
  name: string;
  v: number;
}

const settle = () => new Promise((r) => setImmediate(r));

describe('BusSync', () => {
  let rows: Map<string, Row>;
  let held: Map<string, Row>;
  let applied: Array<[string, number | undefined]>;
  let warnings: string[];
  let resynced: number[];
  let bus: HandBus;
  let sync: BusSync<'name', Row>;

  /** A sync of rows by name into `held`, reading `store` (by default `rows`). */
  const build = (store = { find: async (k: string) => rows.get(k), loadAll: async () => [...rows.values()] }) => {
    const target = {
      applyStored: (k: string, r: Row | undefined) => {
        applied.push([k, r?.v]);
        if (r) held.set(k, r);
        else held.delete(k);
      },
    };
    const source = {
      topic: BUS_TOPICS.provider,
      key: 'name',
      what: 'rows',
      store,
      target,
      held: () => [...held.keys()],
      resynced: (n: number) => void resynced.push(n),
    } as const;
    return new BusSync(source, { warn: (m) => void warnings.push(m) });
  };

  beforeEach(() => {
    rows = new Map();
    held = new Map();
    applied = [];
    warnings = [];
    resynced = [];
    bus = new HandBus();
    sync = build().listen(bus);
  });

  it('re-reads the record a message names, present or gone; ignores a message without the key', async () => {
    rows.set('p1', { name: 'p1', v: 1 });
    bus.deliver(BUS_TOPICS.provider, { name: 'p1' });
    bus.deliver(BUS_TOPICS.provider, { name: 'gone' });
    for (const junk of [null, undefined, 'p1', 42, {}, { name: 7 }, { id: 'p1' }]) bus.deliver(BUS_TOPICS.provider, junk);
    bus.deliver(BUS_TOPICS.tenant, { name: 'p1' });
    await sync.refresh('p1');
    expect(applied).toEqual([
      ['p1', 1],
      ['gone', undefined],
      ['p1', 1],
    ]);
  });

  it('a resync applies every stored record and drops a held one the store no longer has', async () => {
    held.set('old', { name: 'old', v: 0 });
    rows.set('a', { name: 'a', v: 1 });
    rows.set('b', { name: 'b', v: 2 });
    await bus.resyncs[0]();
    expect(applied).toEqual([
      ['a', 1],
      ['b', 2],
      ['old', undefined],
    ]);
    expect([...held.keys()]).toEqual(['a', 'b']);
    expect(resynced).toEqual([2]);
  });

  it('runs re-reads one after another: an earlier slow read never overwrites a later one', async () => {
    const reads: Array<(r: Row) => void> = [];
    const slow = build({ find: () => new Promise<Row>((r) => reads.push(r)), loadAll: async () => [] });
    const first = slow.refresh('k');
    const second = slow.refresh('k');
    await settle();
    // The second read waits for the first: only one is at the store.
    expect(reads).toHaveLength(1);
    reads[0]({ name: 'k', v: 1 });
    await settle();
    expect(reads).toHaveLength(2);
    reads[1]({ name: 'k', v: 2 });
    await Promise.all([first, second]);
    expect(applied).toEqual([
      ['k', 1],
      ['k', 2],
    ]);
  });

  it('a failed read is logged, never thrown, and the next one still runs', async () => {
    const broken = build({ find: () => Promise.reject(new Error('db down')), loadAll: async () => [{ name: 'a', v: 1 }] });
    await expect(broken.refresh('x')).resolves.toBeUndefined();
    await broken.resync();
    expect(warnings).toEqual(['re-reading rows failed: db down']);
    expect(applied).toEqual([['a', 1]]);
  });
});
