import { Body, Controller, Delete, Get, HttpCode, Inject, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { AdminRole } from '../auth/admin-role';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Errors } from '../common/gateway-error';
import { parseCapabilityDeclarations } from '../config/sections/routing';
import { AdminGuard } from '../auth/admin.guard';
import { Provider, ProviderInput, ProvidersService } from '../providers/providers.service';
import { ADMIN_LIMITS, limitFromApi, limitToApi } from '../providers/provider-limits';
import { AdmissionQueue } from '../queue/admission-queue';
import { Router } from '../routing/router.service';
import { effectiveCapabilities } from '../routing/capabilities';
import { WorkerSession } from '../fleet/worker-session';
import { Fleet } from '../fleet/fleet.service';
import { CreateProviderDto, UpdateProviderDto } from './dto/provider.dto';
import { DrainWorkerDto } from './dto/drain-worker.dto';
import { JsonBodyPipe } from '../common/json-body.pipe';
import { PoolsService } from './pools.service';
import { Audited } from '../governance/audited';
import { ApiDoc } from '../common/api-doc';
import { CONTROL_PLANE_API } from './control-plane.schemas';
import { remoteWorkerConflict } from '../fleet/remote-worker-conflict';

const DRAIN_WORKER_BODY = new JsonBodyPipe(DrainWorkerDto);
const CREATE_PROVIDER_BODY = new JsonBodyPipe(CreateProviderDto);
const UPDATE_PROVIDER_BODY = new JsonBodyPipe(UpdateProviderDto);

/**
 * Operator API (bearer ADMIN_TOKEN): providers, workers, drain/undrain (cordon), model refresh,
 * stats. Errors: 404 `not_found` for any unknown id, 409 `conflict`, 422 `validation_failed`.
 */
@Controller('admin')
@UseGuards(AdminGuard)
export class AdminController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly providers: ProvidersService,
    private readonly fleet: Fleet,
    private readonly queues: AdmissionQueue,
    private readonly router: Router,
    private readonly pools: PoolsService,
  ) {}

  @Get('providers')
  @AdminRole('viewer')
  @ApiDoc(CONTROL_PLANE_API.listProviders)
  listProviders() {
    return { data: this.providers.list().map((p) => this.describeProvider(p)) };
  }

  @Post('providers')
  @AdminRole('admin')
  @Audited('providers.create', { target: ({ body }) => (typeof body?.name === 'string' ? body.name : undefined) })
  @ApiDoc(CONTROL_PLANE_API.createProvider)
  @HttpCode(201)
  async createProvider(@Body(CREATE_PROVIDER_BODY) dto: CreateProviderDto) {
    const conflict = () => Errors.conflict(`Provider '${dto.name}' already exists`);
    if (this.providers.get(dto.name)) throw conflict();
    const input = { name: dto.name, ...toInput(dto) };
    // Two creations of one name racing: the second finds it taken once the first has hashed its secret.
    const created = await this.providers.create(input).catch((e: unknown) => {
      if (this.providers.get(dto.name)) throw conflict();
      throw e;
    });
    return this.describeProvider(created);
  }

  @Patch('providers/:name')
  @AdminRole('admin')
  @Audited('providers.update')
  @ApiDoc(CONTROL_PLANE_API.updateProvider)
  async updateProvider(@Param('name') name: string, @Body() body: unknown) {
    if (!this.providers.get(name)) throw Errors.notFound('Provider', name); // before its body is judged
    const dto = UPDATE_PROVIDER_BODY.transform(body);
    const p = await this.providers.update(name, toInput(dto));
    if (!p) throw Errors.notFound('Provider', name);
    return this.describeProvider(p);
  }

  /**
   * Fails the provider's queued and in-flight requests (`provider_deleted`) and closes its workers.
   * A provider from configuration is rewritten at every boot, so deleting it only takes effect
   * until the next restart: that needs `?force=true`.
   */
  @Delete('providers/:name')
  @AdminRole('admin')
  @Audited('providers.delete')
  @ApiDoc(CONTROL_PLANE_API.deleteProvider)
  async deleteProvider(@Param('name') name: string, @Query('force') force?: string) {
    if (force !== undefined && force !== 'true' && force !== 'false') {
      throw Errors.invalidRequest("Query parameter 'force' must be true or false", 'force');
    }
    const p = this.providers.get(name);
    if (!p) throw Errors.notFound('Provider', name);
    if (p.source === 'config' && force !== 'true') {
      throw Errors.conflict(
        `Provider '${name}' comes from configuration (environment or config file) and returns at the next boot; ` +
          'deleting it now drops its workers and fails its requests until then. Remove it from the configuration, ' +
          'or repeat with ?force=true to delete it until the next boot.',
      );
    }
    if (!(await this.providers.remove(name))) throw Errors.notFound('Provider', name);
    if (p.source !== 'config') return { deleted: name };
    return { deleted: name, source: 'config', note: `Provider '${name}' comes from configuration and returns at the next boot` };
  }

  @Get('workers')
  @AdminRole('viewer')
  @ApiDoc(CONTROL_PLANE_API.listWorkers)
  listWorkers() {
    return { data: [...this.fleet.sessions.all()].map((w) => this.describeWorker(w)) };
  }

  @Get('workers/:id')
  @AdminRole('viewer')
  @ApiDoc(CONTROL_PLANE_API.getWorker)
  getWorker(@Param('id') id: string) {
    const w = this.pools.workerOr404(id);
    return {
      ...this.describeWorker(w),
      in_flight_request_ids: [...w.assigned.keys()],
      held_request_ids: [...w.held.keys()],
    };
  }

  /**
   * 202: every live connection with this worker's name drains, and the name stays cordoned
   * (reconnections refused with 1013) until `POST /admin/workers/:id/undrain`.
   */
  @Post('workers/:id/drain')
  @AdminRole('operator')
  @Audited('workers.drain')
  @ApiDoc(CONTROL_PLANE_API.drainWorker)
  @HttpCode(202)
  drainWorker(@Param('id') id: string, @Body() body: unknown) {
    const worker = this.pools.workerOr404(id);
    const dto = DRAIN_WORKER_BODY.transform(body);
    const timeoutMs = Math.round((dto.timeout_secs ?? this.config.shutdownDrainTimeoutMs / 1000) * 1000);
    this.pools.drainWorker(worker, timeoutMs, dto.reason ?? 'admin');
    return this.describeWorker(worker);
  }

  /** Lifts the cordon of the worker's name; the id may belong to a drained worker that is gone. */
  @Post('workers/:id/undrain')
  @AdminRole('operator')
  @Audited('workers.undrain')
  @ApiDoc(CONTROL_PLANE_API.undrainWorker)
  @HttpCode(200)
  undrainWorker(@Param('id') id: string) {
    return this.pools.undrainWorker(id);
  }

  @Get('cordons')
  @AdminRole('viewer')
  @ApiDoc(CONTROL_PLANE_API.cordons)
  cordons() {
    return this.pools.cordons();
  }

  @Get('stats')
  @AdminRole('viewer')
  @ApiDoc(CONTROL_PLANE_API.stats)
  stats() {
    return this.pools.snapshot();
  }

  @Post('workers/:id/refresh-models')
  @AdminRole('operator')
  @Audited('workers.refresh-models')
  @ApiDoc(CONTROL_PLANE_API.refreshModels)
  @HttpCode(202)
  refreshModels(@Param('id') id: string) {
    const worker = this.pools.workerOr404(id);
    // `models_refresh` travels on the worker's own link: another replica's worker would never get it
    // (its channel here carries only forwarded requests), so say where to ask rather than a 202.
    if (worker.remote) throw remoteWorkerConflict(worker);
    this.fleet.requestModelsRefresh(worker, 'admin');
    return this.describeWorker(worker);
  }

  private describeWorker(w: WorkerSession) {
    const providerCaps = this.providers.get(w.provider)?.capabilities ?? {};
    const health = this.router.health.of(w);
    const now = this.clock.now();
    const pool = this.providers.get(w.provider);
    const cordon = pool?.cordon ? 'pool' : this.fleet.cordons.of(w.provider, w.name) ? 'worker' : null;
    return {
      id: w.id,
      name: w.name,
      provider: w.provider,
      replica: w.replica,
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
      cordoned: cordon !== null,
      cordon,
      latency_ms: health.latencySamples > 0 ? Math.round(health.latencyMs) : null,
      cache_stats: w.cacheStats ?? null,
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
      source: p.source,
      has_secret: p.secretHash !== null,
      ...Object.fromEntries(ADMIN_LIMITS.map((f) => [f.api, limitToApi(f, p[f.key])])),
      models: [...p.models],
      capabilities: p.capabilities,
      aliases: p.aliases,
      workers_connected: this.fleet.sessions.ofProvider(p.name).size,
      queue_depth: this.queues.depth(p.name),
    };
  }
}

function toInput(dto: UpdateProviderDto): Omit<ProviderInput, 'name'> {
  const problems: string[] = [];
  const capabilities = dto.capabilities === undefined ? undefined : parseCapabilityDeclarations(dto.capabilities, 'capabilities', problems);
  if (problems.length) {
    const byField = new Map<string, string[]>();
    for (const message of problems) byField.set(problemField(message), [...(byField.get(problemField(message)) ?? []), message]);
    throw Errors.validationFailed([...byField].map(([field, messages]) => ({ field, message: messages.join('; ') })));
  }
  const limits = Object.fromEntries(ADMIN_LIMITS.map((f) => [f.key, limitFromApi(f, dto[f.api as keyof UpdateProviderDto])]));
  return { secret: dto.secret, ...limits, models: dto.models, capabilities };
}

/** The dotted field a capability problem names (`capabilities.m.vision must be …` → `capabilities.m.vision`). */
function problemField(problem: string): string {
  return /^(capabilities[^\s:]*)/.exec(problem)?.[1] ?? 'capabilities';
}
