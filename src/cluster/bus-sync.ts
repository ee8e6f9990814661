import { BUS_TOPICS, ClusterBus } from './cluster-bus.port';

/** What a feature keeps in step with the other replicas through the cluster bus. */
export interface BusSyncSource<K extends string, R extends Record<K, string>> {
  /** The bus topic of its change messages. */
  topic: (typeof BUS_TOPICS)[keyof typeof BUS_TOPICS];
  /** The field naming a record, in a record and in a change message (`{id}`, `{name}`). */
  key: K;
  /** What the records are, for the log line of a failed re-read ("API keys"). */
  what: string;
  /** Where the records are kept (PostgreSQL): one (undefined when it is gone), or all. */
  store: { find(key: string): Promise<R | undefined>; loadAll(): Promise<R[]> };
  /** What this replica holds: a record as stored now replaces it (undefined: it is gone). */
  target: { applyStored(key: string, record: R | undefined): void };
  /** The held keys a resync drops when the store no longer has them (read once the stored ones are applied). */
  held(): Iterable<string>;
  /** Called after a resync with the number of stored records read. */
  resynced?(count: number): void;
}

/**
 * Cluster mode's configuration sync, one shape for API keys, tenants and providers: a record
 * changed on another replica arrives as `{<key>: …}` on the bus and is re-read from the store;
 * once the bus is back after an outage every record is re-read (and a held one the store no longer
 * has is dropped). Re-reads run one after another, so a later change is never overwritten by an
 * earlier read; a failed one is logged, never thrown.
 */
export class BusSync<K extends string, R extends Record<K, string>> {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly source: BusSyncSource<K, R>,
    private readonly logger: { warn(message: string): void },
  ) {}

  /** Subscribes to the source's topic and to the bus's resyncs. */
  listen(bus: ClusterBus): this {
    bus.subscribe(this.source.topic, (data) => {
      const key = (data as Record<string, unknown> | null)?.[this.source.key];
      if (typeof key === 'string') void this.refresh(key);
    });
    bus.onResync(() => this.resync());
    return this;
  }

  /** The record as stored now (or its absence) replaces what this replica holds. */
  refresh(key: string): Promise<void> {
    const { store, target } = this.source;
    return this.serial(async () => target.applyStored(key, await store.find(key)));
  }

  /** Every record re-read: changes missed while the bus was down are applied. */
  resync(): Promise<void> {
    const { store, target, key } = this.source;
    return this.serial(async () => {
      const stored = await store.loadAll();
      const keys = new Set<string>(stored.map((r) => r[key]));
      for (const r of stored) target.applyStored(r[key], r);
      for (const k of this.source.held()) if (!keys.has(k)) target.applyStored(k, undefined);
      this.source.resynced?.(stored.length);
    });
  }

  private serial(work: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(work).catch((e: unknown) => this.logger.warn(`re-reading ${this.source.what} failed: ${(e as Error).message}`));
    return this.chain;
  }
}
