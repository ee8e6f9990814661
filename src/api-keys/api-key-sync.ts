import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { CLOCK, Clock } from '../common/clock';
import { BusSync } from '../cluster/bus-sync';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';
import { ApiKeyStore } from './api-key-store';
import { ApiKeysService } from './api-keys.service';
import { ClusterKeyLookup } from './cluster-key-lookup';

/**
 * Cluster mode: keeps this replica's keys in step with the others. A key created, changed, revoked
 * or deleted elsewhere arrives as `{id}` on the bus and is re-read from the store; after a bus
 * outage every key is re-read (BusSync). Before authentication, a presented key this replica does not hold
 * yet is looked up in the store (cluster-key-lookup.ts). One process: nothing is registered.
 */
@Injectable()
export class ApiKeySync implements OnModuleInit {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly store: ApiKeyStore,
    private readonly http: HttpAdapterHost,
    @Inject(CLOCK) private readonly clock: Clock,
    @Optional() private readonly bus?: ClusterBus,
  ) {}

  onModuleInit(): void {
    if (!this.bus?.enabled) return;
    const { keys, store } = this;
    const log = new Logger('ApiKeys');
    const resynced = (n: number) => log.log(`${n} API key(s) re-read after the cluster bus was back`);
    const source = { topic: BUS_TOPICS.apiKey, key: 'id', what: 'API keys', store, target: keys, held: () => keys.heldIds(), resynced } as const;
    new BusSync(source, log).listen(this.bus);
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
}
