import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { parseCapabilityDeclarations } from '../routing/routing-config';
import { AdminGuard } from '../auth/admin.guard';
import { Dispatcher } from '../dispatch/dispatcher.service';
import { Provider, ProviderInput, ProvidersService } from '../providers/providers.service';
import { AdmissionQueue } from '../queue/admission-queue';
import { Router } from '../routing/router.service';
import { effectiveCapabilities } from '../routing/capabilities';
import { LiveWorker } from '../registry/live-worker';
import { WorkerRegistry } from '../registry/worker-registry.service';
import { CreateProviderDto, UpdateProviderDto } from './dto/provider.dto';
import { DrainWorkerDto } from './dto/drain-worker.dto';
import { JsonBodyPipe } from './json-body.pipe';

/** Operator API (bearer ADMIN_TOKEN): providers, workers, drain, model refresh. */
@Controller('admin')
@UseGuards(AdminGuard)
export class AdminController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly providers: ProvidersService,
    private readonly registry: WorkerRegistry,
    private readonly queues: AdmissionQueue,
    private readonly dispatcher: Dispatcher,
    private readonly router: Router,
  ) {}

  @Get('providers')
  listProviders() {
    return { data: this.providers.list().map((p) => this.describeProvider(p)) };
  }

  @Post('providers')
  @HttpCode(201)
  async createProvider(@Body(new JsonBodyPipe(CreateProviderDto)) dto: CreateProviderDto) {
    if (this.providers.get(dto.name)) throw new GatewayError('invalid_request', `Provider '${dto.name}' already exists`, { param: 'name' });
    return this.describeProvider(await this.providers.create({ name: dto.name, ...toInput(dto) }));
  }

  @Patch('providers/:name')
  async updateProvider(@Param('name') name: string, @Body(new JsonBodyPipe(UpdateProviderDto)) dto: UpdateProviderDto) {
    const p = await this.providers.update(name, toInput(dto));
    if (!p) throw new GatewayError('provider_not_found', `Provider '${name}' not found`);
    return this.describeProvider(p);
  }

  /**
   * Fails the provider's queued and in-flight requests (`provider_deleted`) and closes its workers.
   * A provider from configuration is rewritten at every boot, so deleting it only takes effect
   * until the next restart: that needs `?force=true`.
   */
  @Delete('providers/:name')
  async deleteProvider(@Param('name') name: string, @Query('force') force?: string) {
    if (force !== undefined && force !== 'true' && force !== 'false') {
      throw Errors.invalidRequest("Query parameter 'force' must be true or false", 'force');
    }
    const p = this.providers.get(name);
    if (!p) throw new GatewayError('provider_not_found', `Provider '${name}' not found`);
    if (p.source === 'config' && force !== 'true') {
      throw new GatewayError(
        'conflict',
        `Provider '${name}' comes from configuration (environment or config file) and returns at the next boot; ` +
          'deleting it now drops its workers and fails its requests until then. Remove it from the configuration, ' +
          'or repeat with ?force=true to delete it until the next boot.',
      );
    }
    if (!(await this.providers.remove(name))) throw new GatewayError('provider_not_found', `Provider '${name}' not found`);
    if (p.source !== 'config') return { deleted: name };
    return { deleted: name, source: 'config', note: `Provider '${name}' comes from configuration and returns at the next boot` };
  }

  @Get('workers')
  listWorkers() {
    return { data: [...this.registry.all()].map((w) => this.describeWorker(w)) };
  }

  @Post('workers/:id/drain')
  @HttpCode(202)
  drainWorker(@Param('id') id: string, @Body(new JsonBodyPipe(DrainWorkerDto)) dto: DrainWorkerDto) {
    const worker = this.workerOr404(id);
    const timeoutMs = Math.round((dto.timeout_secs ?? this.config.shutdownDrainTimeoutMs / 1000) * 1000);
    this.dispatcher.drainWorker(worker, timeoutMs, dto.reason ?? 'admin');
    return this.describeWorker(worker);
  }

  @Post('workers/:id/refresh-models')
  @HttpCode(202)
  refreshModels(@Param('id') id: string) {
    const worker = this.workerOr404(id);
    this.dispatcher.requestModelsRefresh(worker, 'admin');
    return this.describeWorker(worker);
  }

  private workerOr404(id: string): LiveWorker {
    const worker = this.registry.get(id);
    if (!worker) throw new GatewayError('not_found', `Worker '${id}' not found`);
    return worker;
  }

  private describeWorker(w: LiveWorker) {
    const providerCaps = this.providers.get(w.provider)?.capabilities ?? {};
    const health = w.health;
    const now = this.clock.now();
    return {
      id: w.id,
      name: w.name,
      provider: w.provider,
      models: w.advertisedModels(),
      capabilities: Object.fromEntries([...w.models].map((m) => [m, effectiveCapabilities(m, providerCaps, w.capabilities)])),
      endpoints: w.endpoints ? [...w.endpoints] : null,
      runner: w.runner ?? null,
      priority: this.router.priorityOf(w),
      max_concurrent: w.maxConcurrent,
      in_flight: w.assigned.size,
      held_slots: w.held.size,
      load: w.load,
      draining: w.draining,
      latency_ms: health.latencySamples > 0 ? Math.round(health.latencyMs) : null,
      consecutive_failures: health.consecutiveFailures,
      ejected: health.isEjected(now),
      ejected_until: health.isEjected(now) ? new Date(health.ejectedUntil).toISOString() : null,
      connected_at: new Date(w.connectedAt).toISOString(),
      last_seen_at: new Date(w.lastSeenAt).toISOString(),
    };
  }

  private describeProvider(p: Provider) {
    return {
      name: p.name,
      enabled: p.enabled,
      source: p.source,
      has_secret: p.secretHash !== null,
      max_queue_len: p.maxQueueLen,
      queue_timeout_secs: p.queueTimeoutMs / 1000,
      request_timeout_secs: p.requestTimeoutMs / 1000,
      max_models: p.maxModelsPerWorker,
      models: [...p.declaredModels],
      priority: p.priority,
      capabilities: p.capabilities,
      workers_connected: this.registry.ofProvider(p.name).size,
      queue_depth: this.queues.depth(p.name),
    };
  }
}

function toInput(dto: UpdateProviderDto): Omit<ProviderInput, 'name'> {
  const problems: string[] = [];
  const capabilities = dto.capabilities === undefined ? undefined : parseCapabilityDeclarations(dto.capabilities, 'capabilities', problems);
  if (problems.length) throw Errors.invalidRequest(problems.join('; '), 'capabilities');
  return {
    secret: dto.secret,
    enabled: dto.enabled,
    maxQueueLen: dto.max_queue_len,
    queueTimeoutMs: dto.queue_timeout_secs === undefined ? undefined : Math.round(dto.queue_timeout_secs * 1000),
    requestTimeoutMs: dto.request_timeout_secs === undefined ? undefined : Math.round(dto.request_timeout_secs * 1000),
    maxModelsPerWorker: dto.max_models,
    models: dto.models,
    priority: dto.priority,
    capabilities,
  };
}
