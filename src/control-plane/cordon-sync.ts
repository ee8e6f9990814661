import { Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { BUS_TOPICS, ClusterBus } from '../cluster/cluster-bus.port';
import { ConfigReloadService, ReloadRejected } from '../config/config-reload.service';
import { ProvidersService } from '../providers/providers.service';
import { PoolsService } from './pools.service';

interface PoolCordonMessage {
  pool: string;
  drain: boolean;
  deadlineMs?: number;
  reason?: string;
}

interface WorkerCordonMessage {
  provider: string;
  name: string;
  drain: boolean;
  workerId?: string;
  timeoutMs?: number;
  reason?: string;
}

const isObject = (d: unknown): d is Record<string, unknown> => typeof d === 'object' && d !== null;
const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/**
 * Cluster mode: cordons and configuration reloads made on one replica hold on every replica.
 * Pool and worker-name drains and undrains published by another replica (pools.service.ts
 * publishes this replica's) are applied here to the workers connected to this replica; a reload
 * (`POST /admin/reload`, SIGHUP) on another replica reloads this one from its own configuration
 * file and environment. One process: nothing is registered.
 */
@Injectable()
export class CordonSync implements OnModuleInit {
  private readonly log = new Logger('ClusterSync');

  constructor(
    private readonly pools: PoolsService,
    private readonly providers: ProvidersService,
    private readonly reloads: ConfigReloadService,
    @Optional() private readonly bus?: ClusterBus,
  ) {}

  onModuleInit(): void {
    const bus = this.bus;
    if (!bus?.enabled) return;
    bus.subscribe(BUS_TOPICS.poolCordon, (data, from) => this.poolCordon(data, from));
    bus.subscribe(BUS_TOPICS.workerCordon, (data, from) => this.workerCordon(data, from));
    bus.subscribe(BUS_TOPICS.reload, (data, from) => this.reload(data, from));
    // SIGHUP reloads this replica; the others follow when the file was accepted.
    this.reloads.observeSignalReloads(async (event) => {
      if (event.result) this.reloaded(event.trigger);
    });
  }

  /** Tells the other replicas to reload (after a reload here was accepted). */
  reloaded(trigger: string): void {
    this.bus?.publish(BUS_TOPICS.reload, { trigger });
  }

  private poolCordon(data: unknown, from: string): void {
    if (!isObject(data) || typeof data.pool !== 'string') return;
    const m = data as unknown as PoolCordonMessage;
    const p = this.providers.get(m.pool);
    if (!p) return;
    if (!m.drain) {
      if (p.cordon) this.log.log(`pool "${p.name}" undrained by replica ${from}`);
      this.providers.uncordon(p.name);
      return;
    }
    if (!isCount(m.deadlineMs)) return;
    this.pools.cordonPool(p, m.deadlineMs, typeof m.reason === 'string' ? m.reason : 'pool_drain');
  }

  private workerCordon(data: unknown, from: string): void {
    if (!isObject(data) || typeof data.provider !== 'string' || typeof data.name !== 'string') return;
    const m = data as unknown as WorkerCordonMessage;
    if (!m.drain) {
      if (this.pools.uncordonName(m.provider, m.name)) this.log.log(`worker name "${m.name}" of provider "${m.provider}" undrained by replica ${from}`);
      return;
    }
    if (typeof m.workerId !== 'string' || !isCount(m.timeoutMs)) return;
    this.pools.cordonName(m.provider, m.name, m.workerId, m.timeoutMs, typeof m.reason === 'string' ? m.reason : 'admin');
  }

  private async reload(data: unknown, from: string): Promise<void> {
    const trigger = isObject(data) && typeof data.trigger === 'string' ? data.trigger.slice(0, 100) : 'reload';
    try {
      await this.reloads.reload(`${trigger} on replica ${from}`);
    } catch (e) {
      // The reload logs a refused file itself; this replica keeps its running configuration.
      if (!(e instanceof ReloadRejected)) this.log.error(`configuration reload asked by replica ${from} failed: ${(e as Error).message}`);
    }
  }
}
