import { Writable } from 'node:stream';
import { ArgumentsHost, Catch, ExceptionFilter, Injectable, Module, ModuleMetadata } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { parsePrometheusText, SWITCHBOARD_FAMILIES } from '../../test/observability/prometheus-text';
import { registerAccessLog } from '../observability/access-log';
import { registerCorrelationId } from '../observability/correlation-id';
import { HEALTH_SNAPSHOT, HealthSnapshot } from '../observability/health-snapshot';
import { HealthModule } from './health.module';
import { LifecycleState } from '../observability/lifecycle-state';
import { createLogger } from '../observability/logger';
import { MetricsService } from '../observability/metrics.service';
import { ObservabilityModule } from '../observability/observability.module';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const sqliteInMemory = TypeOrmModule.forRoot({ type: 'better-sqlite3', database: ':memory:' });

async function start(imports: ModuleMetadata['imports']): Promise<{ app: NestFastifyApplication; url: string }> {
  const moduleRef = await Test.createTestingModule({ imports }).compile();
  const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
  registerCorrelationId(app.getHttpAdapter().getInstance());
  await app.listen(0, '127.0.0.1');
  return { app, url: await app.getUrl() };
}

/** Minimal stand-in for the relay's snapshot; leaks a field the summary must not copy. */
@Injectable()
class FakeSnapshot implements HealthSnapshot {
  workersConnected = () => 3;
  queueDepth = () => this.depth;
  modelsLoaded = () => 2;
  providers = () => [
    { name: 'gpu', enabled: true, workers: 3, queue_depth: this.depth, max_queue_len: this.bound, secret_hash: 'scrypt$leak', address: '10.0.0.7:5555' },
  ];
  bound = 100;
  depth = 5;
}
@Module({ providers: [FakeSnapshot], exports: [FakeSnapshot] })
class FakeRelayModule {}

describe('observability over HTTP (Fastify)', () => {
  const apps: NestFastifyApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });
  const boot = async (imports: ModuleMetadata['imports']) => {
    const started = await start(imports);
    apps.push(started.app);
    return started;
  };

  it("serves /metrics from each app's own registry, even with two apps in one process", async () => {
    const one = await boot([sqliteInMemory, ObservabilityModule, HealthModule]);
    const two = await boot([sqliteInMemory, ObservabilityModule, HealthModule]);
    one.app.get(MetricsService).rejection('QUEUE_FULL');

    for (const { url } of [one, two]) {
      const res = await fetch(`${url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const families = parsePrometheusText(await res.text());
      for (const [name, type] of Object.entries(SWITCHBOARD_FAMILIES)) expect(families.get(name)?.type).toBe(type);
      expect(families.get('process_resident_memory_bytes')?.type).toBe('gauge');
    }
    const rejectedOn = async (url: string) =>
      parsePrometheusText(await (await fetch(`${url}/metrics`)).text()).get('switchboard_rejections_total')!.samples.length;
    expect(await rejectedOn(one.url)).toBe(1);
    expect(await rejectedOn(two.url)).toBe(0);
  });

  it('answers liveness, and readiness until shutdown begins', async () => {
    const { app, url } = await boot([sqliteInMemory, ObservabilityModule, HealthModule]);
    expect((await fetch(`${url}/health/live`)).status).toBe(200);

    const ready = await fetch(`${url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', details: { database: { status: 'up' }, lifecycle: { status: 'up' } } });

    app.get(LifecycleState).beginShutdown();
    const draining = await fetch(`${url}/health/ready`);
    expect(draining.status).toBe(503);
    expect(await draining.json()).toMatchObject({ status: 'shutting_down', error: { lifecycle: { status: 'down' } } });
    expect((await fetch(`${url}/health/live`)).status).toBe(200);
    const summary = await fetch(`${url}/health`);
    expect(summary.status).toBe(503);
    expect(await summary.json()).toMatchObject({ status: 'shutting_down' });
  });

  it('is not ready without a database connection', async () => {
    const { url } = await boot([ObservabilityModule, HealthModule]);
    const res = await fetch(`${url}/health/ready`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'error', error: { database: { status: 'down' } } });
  });

  it('keeps readiness a 503 with the terminus body under a catch-all global exception filter', async () => {
    @Catch()
    class RewriteEverything implements ExceptionFilter {
      catch(_e: unknown, host: ArgumentsHost) {
        host.switchToHttp().getResponse().status(500).send({ error: 'rewritten' });
      }
    }
    @Module({ providers: [{ provide: APP_FILTER, useClass: RewriteEverything }] })
    class GlobalFilterModule {}
    const { app, url } = await boot([sqliteInMemory, ObservabilityModule, HealthModule, GlobalFilterModule]);
    app.get(LifecycleState).beginShutdown();
    const res = await fetch(`${url}/health/ready`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'shutting_down' });

    const { url: noDb } = await boot([ObservabilityModule, HealthModule, GlobalFilterModule]);
    const down = await fetch(`${noDb}/health/ready`);
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ status: 'error', error: { database: { status: 'down' } } });
  });

  it('summarises with zeros until the relay provides a snapshot', async () => {
    const { url } = await boot([sqliteInMemory, ObservabilityModule, HealthModule]);
    const body = await (await fetch(`${url}/health`)).json();
    expect(body).toEqual({
      status: 'healthy',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      uptime_secs: expect.any(Number),
      workers_connected: 0,
      queue_depth: 0,
      models_loaded: 0,
      uptime: body.uptime_secs,
      modelsLoaded: 0,
      queueDepth: 0,
      providers: [],
    });
  });

  it('summarises the relay snapshot given to HealthModule.withSnapshot, copying only public fields', async () => {
    const health = HealthModule.withSnapshot({ imports: [FakeRelayModule], useExisting: FakeSnapshot });
    const { url } = await boot([sqliteInMemory, ObservabilityModule, health]);
    const res = await fetch(`${url}/health`);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({
      workers_connected: 3,
      queue_depth: 5,
      models_loaded: 2,
      queueDepth: 5,
      modelsLoaded: 2,
      providers: [{ name: 'gpu', enabled: true, workers: 3, queue_depth: 5, max_queue_len: 100 }],
    });
    expect(text).not.toMatch(/secret|scrypt|10\.0\.0\.7/);
  });

  it('answers 503 "saturated" when every enabled pool\'s queue is at its bound', async () => {
    const health = HealthModule.withSnapshot({ imports: [FakeRelayModule], useExisting: FakeSnapshot });
    const { url } = await boot([sqliteInMemory, ObservabilityModule, health]);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    const fake = apps[apps.length - 1].get(FakeSnapshot);
    fake.bound = 5; // queue_depth 5 of 5
    const res = await fetch(`${url}/health`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'saturated' });
  });

  it('stays 200 "healthy" on an idle gateway whose pools have max_queue_len 0', async () => {
    const health = HealthModule.withSnapshot({ imports: [FakeRelayModule], useExisting: FakeSnapshot });
    const { url } = await boot([sqliteInMemory, ObservabilityModule, health]);
    const fake = apps[apps.length - 1].get(FakeSnapshot);
    fake.bound = 0;
    fake.depth = 0; // never queue: 0 >= 0 must not read as saturated
    const res = await fetch(`${url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'healthy', queueDepth: 0 });
  });

  it('picks up HEALTH_SNAPSHOT from a global provider without withSnapshot', async () => {
    @Module({ providers: [{ provide: HEALTH_SNAPSHOT, useClass: FakeSnapshot }], exports: [HEALTH_SNAPSHOT] })
    class GlobalRelay {}
    const { url } = await boot([sqliteInMemory, ObservabilityModule, { module: GlobalRelay, global: true }, HealthModule]);
    expect(await (await fetch(`${url}/health`)).json()).toMatchObject({ workers_connected: 3 });
  });

  it('echoes X-Correlation-Id or mints a UUIDv4, on health, metrics and unknown routes', async () => {
    const { url } = await boot([sqliteInMemory, ObservabilityModule, HealthModule]);
    for (const path of ['/health', '/health/live', '/metrics', '/no-such-route']) {
      const echoed = await fetch(`${url}${path}`, { headers: { 'x-correlation-id': 'abc-123' } });
      expect(echoed.headers.get('x-correlation-id')).toBe('abc-123');
      const minted = await fetch(`${url}${path}`);
      expect(minted.headers.get('x-correlation-id')).toMatch(UUID_V4);
    }
  });

  it('writes a debug access-log line with the correlation id and no query secrets', async () => {
    let raw = '';
    const logger = createLogger('debug', new Writable({ write: (c, _e, done) => ((raw += c.toString()), done()) }));
    const moduleRef = await Test.createTestingModule({ imports: [sqliteInMemory, ObservabilityModule, HealthModule] }).compile();
    const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
    apps.push(app);
    registerCorrelationId(app.getHttpAdapter().getInstance());
    registerAccessLog(app.getHttpAdapter().getInstance(), logger);
    await app.listen(0, '127.0.0.1');

    await fetch(`${await app.getUrl()}/health/live?worker_secret=hunter2&x=1`, { headers: { 'x-correlation-id': 'req-9' } });
    const line = JSON.parse(raw.trim().split('\n').pop()!);
    expect(line).toMatchObject({
      level: 'debug',
      context: 'AccessLog',
      method: 'GET',
      url: '/health/live?worker_secret=[redacted]&x=1',
      status: 200,
      correlation_id: 'req-9',
    });
    expect(typeof line.duration_ms).toBe('number');
    expect(raw).not.toContain('hunter2');
  });

  it('logs other requests at info with the status of a hijacked raw reply', async () => {
    let raw = '';
    const logger = createLogger('info', new Writable({ write: (c, _e, done) => ((raw += c.toString()), done()) }));
    const moduleRef = await Test.createTestingModule({ imports: [sqliteInMemory, ObservabilityModule, HealthModule] }).compile();
    const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
    apps.push(app);
    const fastify = app.getHttpAdapter().getInstance();
    registerCorrelationId(fastify);
    registerAccessLog(fastify, logger);
    fastify.get('/hijacked', (_req, reply) => {
      reply.hijack();
      reply.raw.writeHead(201, { 'content-type': 'text/plain' });
      reply.raw.end('done');
    });
    await app.listen(0, '127.0.0.1');

    await fetch(`${await app.getUrl()}/health/live`);
    await fetch(`${await app.getUrl()}/hijacked`, { headers: { 'x-correlation-id': 'req-10' } });
    await new Promise((r) => setTimeout(r, 50));
    const lines = raw
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1); // the probe stays at debug
    expect(lines[0]).toMatchObject({ level: 'info', url: '/hijacked', status: 201, correlation_id: 'req-10' });
  });
});
