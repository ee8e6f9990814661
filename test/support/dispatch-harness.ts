import { AppConfig } from '../../src/config';
import { Clock } from '../../src/common/clock';
import { Dispatcher } from '../../src/dispatch/dispatcher.service';
import { RelayRequest } from '../../src/dispatch/relay-request';
import { LifecycleState } from '../../src/observability/lifecycle-state';
import { MetricsService } from '../../src/observability/metrics.service';
import { ModelCapabilities, ServerToWorkerMessage } from '../../src/protocol';
import { ProviderRecord, ProviderStore } from '../../src/providers/provider-store';
import { ProvidersService } from '../../src/providers/providers.service';
import { AdmissionQueue } from '../../src/queue/admission-queue';
import { WorkerChannel, WorkerSession } from '../../src/fleet/worker-session';
import { Fleet } from '../../src/fleet/fleet.service';
import { WorkerRecords } from '../../src/registry/worker-records.port';
import { Router } from '../../src/routing/router.service';
import { NO_USAGE_RECORDS, UsageRecorder } from '../../src/usage/usage-recorder.port';
import { PoolStats } from '../../src/providers/pool-stats';
import { MetricsObserver } from '../../src/dispatch/observers/metrics.observer';
import { ServiceTimeObserver } from '../../src/dispatch/observers/service-time.observer';
import { PoolStatsObserver } from '../../src/dispatch/observers/pool-stats.observer';
import { RequestObservers } from '../../src/dispatch/observers/request-observers';
import { UsageObserver } from '../../src/dispatch/observers/usage.observer';
import { ProviderChanges } from '../../src/dispatch/provider-changes';
import { ShutdownCoordinator } from '../../src/control-plane/shutdown-coordinator.service';

/** Providers from the config only: nothing is loaded or saved. */
export class MemoryProviderStore extends ProviderStore {
  async loadAll(): Promise<ProviderRecord[]> {
    return [];
  }
  async save(): Promise<void> {}
  async delete(): Promise<void> {}
}

/** Worker records that remember nothing (no model is "recently known"). */
export class NoWorkerRecords extends WorkerRecords {
  recordConnected() {}
  recordModels() {}
  recordHeartbeat() {}
  recordDisconnected() {}
  recentlyKnowsModel() {
    return false;
  }
}

/** A worker's socket as the dispatcher sees it: every frame sent is kept, a close is remembered. */
export class RecordingChannel implements WorkerChannel {
  sent: ServerToWorkerMessage[] = [];
  closedWith: [number, string] | undefined;
  send(m: ServerToWorkerMessage) {
    this.sent.push(m);
  }
  close(code: number, reason: string) {
    this.closedWith = [code, reason];
  }
}

/** A worker session as the link builds one at registration (positional, for short tests). */
export function workerSession(
  id: string,
  provider: string,
  name: string,
  models: string[],
  maxConcurrent: number,
  remoteAddress: string,
  connectedAt: number,
  channel: WorkerChannel,
  capabilities?: Record<string, ModelCapabilities>,
  endpoints?: string[],
  declaredPriority?: number,
): WorkerSession {
  return new WorkerSession({ id, provider, name, models, maxConcurrent, remoteAddress, connectedAt, capabilities, endpoints, declaredPriority }, channel);
}

export interface DispatchHarness {
  providers: ProvidersService;
  fleet: Fleet;
  router: Router;
  queue: AdmissionQueue<RelayRequest>;
  dispatcher: Dispatcher;
  lifecycle: LifecycleState;
  metrics: MetricsService;
  poolStats: PoolStats;
  /** The gateway's shutdown: queued requests answered, every worker drained. */
  shutdown(timeoutMs: number): Promise<void>;
}

/** A real Dispatcher over real routing and queueing, in memory, driven by `clock`. */
export async function dispatchHarness(config: AppConfig, clock: Clock, usage?: UsageRecorder): Promise<DispatchHarness> {
  const providers = new ProvidersService(config, new MemoryProviderStore());
  await providers.onModuleInit();
  const records = new NoWorkerRecords();
  const metrics = new MetricsService();
  const lifecycle = new LifecycleState();
  const fleet = new Fleet(config, clock, records, metrics, lifecycle);
  const router = new Router(config, clock, providers, fleet, records, metrics);
  const queue = new AdmissionQueue<RelayRequest>(config, clock, metrics);
  const poolStats = new PoolStats(clock);
  const observers = new RequestObservers(
    new MetricsObserver(metrics),
    new UsageObserver(usage ?? NO_USAGE_RECORDS),
    new PoolStatsObserver(poolStats),
    new ServiceTimeObserver(clock, queue),
  );
  const dispatcher = new Dispatcher(config, clock, router, queue, fleet, observers);
  new ProviderChanges(providers, fleet, dispatcher, queue, metrics);
  const coordinator = new ShutdownCoordinator(config, lifecycle, fleet, queue);
  return { providers, fleet, router, queue, dispatcher, lifecycle, metrics, poolStats, shutdown: (ms) => coordinator.shutdown(ms) };
}
