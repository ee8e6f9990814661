import { AppConfig } from '../../src/config';
import { Clock } from '../../src/common/clock';
import { Dispatcher } from '../../src/dispatch/dispatcher.service';
import { RelayRequest } from '../../src/dispatch/relay-request';
import { LifecycleState } from '../../src/observability/lifecycle-state';
import { MetricsService } from '../../src/observability/metrics.service';
import { ServerToWorkerMessage } from '../../src/protocol';
import { ProviderRecord, ProviderStore } from '../../src/providers/provider-store';
import { ProvidersService } from '../../src/providers/providers.service';
import { AdmissionQueue } from '../../src/queue/admission-queue';
import { WorkerChannel } from '../../src/registry/live-worker';
import { WorkerRecords } from '../../src/registry/worker-records.port';
import { WorkerRegistry } from '../../src/registry/worker-registry.service';
import { Router } from '../../src/routing/router.service';
import { UsageRecorder } from '../../src/usage/usage-recorder.port';

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

export interface DispatchHarness {
  providers: ProvidersService;
  registry: WorkerRegistry;
  router: Router;
  queue: AdmissionQueue<RelayRequest>;
  dispatcher: Dispatcher;
  lifecycle: LifecycleState;
  metrics: MetricsService;
}

/** A real Dispatcher over real routing and queueing, in memory, driven by `clock`. */
export async function dispatchHarness(config: AppConfig, clock: Clock, usage?: UsageRecorder): Promise<DispatchHarness> {
  const providers = new ProvidersService(config, new MemoryProviderStore());
  await providers.onModuleInit();
  const registry = new WorkerRegistry();
  const records = new NoWorkerRecords();
  const metrics = new MetricsService();
  const lifecycle = new LifecycleState();
  const router = new Router(config, clock, providers, registry, records, metrics);
  const queue = new AdmissionQueue<RelayRequest>(config);
  const dispatcher = new Dispatcher(config, clock, providers, registry, queue, router, records, metrics, lifecycle, usage);
  return { providers, registry, router, queue, dispatcher, lifecycle, metrics };
}
