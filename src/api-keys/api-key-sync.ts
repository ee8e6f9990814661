import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { CLOCK, Clock } from '../common/clock';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';
import { ApiKeyStore } from './api-key-store';
import { ApiKeysService } from './api-keys.service';
import { ClusterKeyLookup } from './cluster-key-lookup';

/**
 * Cluster mode: keeps this replica's keys in step with the others. A key created, changed, revoked
 * or deleted elsewhere arrives as `{id}` on the bus and is re-read from the store; after a bus
 * outage every key is re-read. Before authentication, a presented key this replica does not hold
 * yet is looked up in the store (cluster-key-lookup.ts). One process: nothing is registered.
 */
@Injectable()
export class ApiKeySync implements OnModuleInit {
  private readonly log = new Logger('ApiKeys');
  /** Re-reads run one after another, so a later change is never overwritten by an earlier read. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly keys: ApiKeysService,
    private readonly store: ApiKeyStore,
    private readonly http: HttpAdapterHost,
    @Inject(CLOCK) private readonly clock: Clock,
    @Optional() private readonly bus?: ClusterBus,
  ) {}

  onModuleInit(): void {
    if (!this.bus?.enabled) return;
    this.bus.subscribe(BUS_TOPICS.apiKey, (data) => {
      const id = (data as { id?: unknown } | null)?.id;
      if (typeof id === 'string') void this.refresh(id);
    });
    this.bus.onResync(() => this.resync());
    const lookup = new ClusterKeyLookup({
      knows: (hash) => this.keys.knowsHash(hash),
      find: (hash) => this.store.findByHash(hash),
      adopt: (record) => this.keys.applyStored(record.id, record),
      blocked: (headers, peer) => this.keys.limiter.isBlocked(this.keys.limiter.clientKey(peer, headers)),
      now: () => this.clock.now(),
    });
    // Before the route's handler, so the synchronous authentication finds the key in memory.
    const fastify = this.http.httpAdapter?.getInstance<FastifyInstance>();
    fastify?.addHook('onRequest', (req, _reply, done) => {
      const pending = lookup.prepare(req.headers, req.raw.socket?.remoteAddress);
      if (pending) void pending.then(() => done());
      else done();
    });
  }

  /** The key as stored now (or its absence) replaces what this replica holds. */
  refresh(id: string): Promise<void> {
    return this.serial(async () => this.keys.applyStored(id, await this.store.find(id)));
  }

  /** Every key re-read: changes missed while the bus was down are applied. */
  resync(): Promise<void> {
    return this.serial(async () => {
      const stored = await this.store.loadAll();
      const ids = new Set(stored.map((r) => r.id));
      for (const r of stored) this.keys.applyStored(r.id, r);
      for (const id of this.keys.heldIds()) if (!ids.has(id)) this.keys.applyStored(id, undefined);
      this.log.log(`${stored.length} API key(s) re-read after the cluster bus was back`);
    });
  }

  private serial(work: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(work).catch((e: unknown) => this.log.warn(`re-reading API keys failed: ${(e as Error).message}`));
    return this.chain;
  }
}
