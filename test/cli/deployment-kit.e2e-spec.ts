import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { eventually } from '../support/http';
import { BuiltPackage, buildPackage, freePort, NodeRun, ROOT, runNode } from './built-package';
import {
  BUILD_KEYS,
  DEPENDS_ON_CONDITIONS,
  DURATION,
  environmentOf,
  HEALTHCHECK_KEYS,
  NAME,
  parsePort,
  parseVolume,
  RESTART_POLICIES,
  SERVICE_KEYS,
  TOP_LEVEL_KEYS,
  VolumeMount,
  VOLUME_KEYS,
} from './compose';
import { copiesOf, dockerignore, envOf, execForm, globToRegExp, healthcheckOf, lastOf, parseDockerfile, Stage } from './dockerfile';

/**
 * The deployment kit (docker/), checked without a Docker engine: the compose file against the
 * compose-spec essentials, the Dockerfiles' stages and COPY sources, the Prometheus and Grafana
 * wiring, and the services' start commands run outside Docker with the compose environment
 * (service host names mapped to loopback ports). What this cannot cover: pulling and building
 * the images, PostgreSQL and Redis in containers, container networking and healthcheck timing.
 */
const DOCKER = join(ROOT, 'docker');
const COMPOSE_FILE = join(DOCKER, 'compose.yml');
type Service = Record<string, any>;
const compose = parseYaml(readFileSync(COMPOSE_FILE, 'utf8')) as { services: Record<string, Service>; volumes?: Record<string, any>; [k: string]: unknown };
const services = compose.services;
/** Interpolation with nothing set: the defaults a first `docker compose up` uses. */
const NO_ENV: Record<string, string | undefined> = {};

/** A path in the compose file, relative to the compose file's directory. */
const fromCompose = (p: string) => resolve(DOCKER, p);
const mountsOf = (s: Service): VolumeMount[] => (s.volumes ?? []).map((v: string) => parseVolume(v));

interface Built {
  context: string;
  dockerfile: string;
  stages: Stage[];
  final: Stage;
  ignored: (path: string) => boolean;
}

function builtImage(service: Service): Built {
  const build = typeof service.build === 'string' ? { context: service.build } : service.build;
  const context = fromCompose(build.context);
  const dockerfile = join(context, build.dockerfile ?? 'Dockerfile');
  const stages = parseDockerfile(readFileSync(dockerfile, 'utf8'));
  const final = build.target ? stages.find((s) => s.name === build.target)! : stages[stages.length - 1];
  const ignoreFile = [`${dockerfile}.dockerignore`, join(context, '.dockerignore')].find(existsSync);
  return { context, dockerfile, stages, final, ignored: ignoreFile ? dockerignore(readFileSync(ignoreFile, 'utf8')) : () => false };
}

describe('docker/compose.yml', () => {
  it('has the services of the kit', () => {
    expect(Object.keys(services).sort()).toEqual(['gateway', 'grafana', 'mock-backend', 'postgres', 'prometheus', 'redis', 'worker']);
  });

  it('uses only compose-spec keys, valid names and values', () => {
    for (const key of Object.keys(compose)) expect({ key, known: TOP_LEVEL_KEYS.includes(key) || key.startsWith('x-') }).toEqual({ key, known: true });
    for (const [name, s] of Object.entries(services)) {
      expect(name).toMatch(NAME);
      for (const key of Object.keys(s)) expect({ service: name, key, known: SERVICE_KEYS.includes(key) }).toEqual({ service: name, key, known: true });
      expect({ service: name, hasImageOrBuild: Boolean(s.image || s.build) }).toEqual({ service: name, hasImageOrBuild: true });
      if (s.build && typeof s.build === 'object') for (const key of Object.keys(s.build)) expect(BUILD_KEYS).toContain(key);
      if (s.healthcheck) {
        for (const key of Object.keys(s.healthcheck)) expect(HEALTHCHECK_KEYS).toContain(key);
        expect(['CMD', 'CMD-SHELL', 'NONE']).toContain(s.healthcheck.test[0]);
        for (const d of ['interval', 'timeout', 'start_period']) if (s.healthcheck[d]) expect(s.healthcheck[d]).toMatch(DURATION);
      }
      if (s.restart) expect(RESTART_POLICIES).toContain(s.restart);
      if (s.stop_grace_period) expect(s.stop_grace_period).toMatch(DURATION);
      for (const c of ['command', 'entrypoint'])
        if (s[c] !== undefined) expect(Array.isArray(s[c]) && s[c].every((w: unknown) => typeof w === 'string')).toBe(true);
      // Every value interpolates (no malformed ${...}) and is a scalar.
      expect(() => environmentOf(s, NO_ENV)).not.toThrow();
      for (const p of s.ports ?? []) {
        const port = parsePort(p);
        // Published ports stay on this machine unless an operator changes it.
        expect({ service: name, port: p, hostIp: port.hostIp }).toEqual({ service: name, port: p, hostIp: '127.0.0.1' });
      }
    }
    for (const [name, v] of Object.entries(compose.volumes ?? {})) {
      expect(name).toMatch(NAME);
      for (const key of Object.keys(v ?? {})) expect(VOLUME_KEYS).toContain(key);
    }
  });

  it('depends only on services that exist, waiting for health only where there is a healthcheck', () => {
    for (const [name, s] of Object.entries(services)) {
      const deps: Record<string, { condition: string }> = Array.isArray(s.depends_on)
        ? Object.fromEntries(s.depends_on.map((d: string) => [d, { condition: 'service_started' }]))
        : (s.depends_on ?? {});
      for (const [dep, spec] of Object.entries(deps)) {
        expect({ service: name, dependsOn: dep, exists: dep in services }).toEqual({ service: name, dependsOn: dep, exists: true });
        expect(DEPENDS_ON_CONDITIONS).toContain(spec.condition);
        if (spec.condition === 'service_healthy') {
          const target = services[dep];
          const hasHealthcheck = Boolean(target.healthcheck) || Boolean(target.build && healthcheckOf(builtImage(target).final));
          expect({ service: name, dependsOn: dep, hasHealthcheck }).toEqual({ service: name, dependsOn: dep, hasHealthcheck: true });
        }
      }
    }
  });

  it('declares every named volume it mounts, mounts every one it declares, and bind-mounts paths that exist', () => {
    const declared = Object.keys(compose.volumes ?? {});
    const used = new Set<string>();
    for (const [name, s] of Object.entries(services)) {
      for (const m of mountsOf(s)) {
        if (m.type === 'volume') {
          used.add(m.source);
          expect({ service: name, volume: m.source, declared: declared.includes(m.source) }).toEqual({ service: name, volume: m.source, declared: true });
        } else {
          expect({ service: name, bind: m.source, exists: existsSync(fromCompose(m.source)) }).toEqual({ service: name, bind: m.source, exists: true });
        }
      }
    }
    expect([...used].sort()).toEqual([...declared].sort());
  });

  it('builds the gateway and the worker from Dockerfiles whose stages and COPY sources are consistent', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    for (const name of ['gateway', 'worker']) {
      const image = builtImage(services[name]);
      expect(existsSync(image.dockerfile)).toBe(true);
      image.stages.forEach((stage, i) => {
        for (const copy of copiesOf(stage)) {
          if (copy.from !== undefined) {
            // --from names an earlier stage (or an image reference, which has a ':' or '/').
            const earlier = image.stages.slice(0, i).some((s) => s.name === copy.from || String(s.index) === copy.from);
            expect({ dockerfile: image.dockerfile, line: copy.line, from: copy.from, earlierStage: earlier || /[:/]/.test(copy.from) }).toEqual({
              dockerfile: image.dockerfile,
              line: copy.line,
              from: copy.from,
              earlierStage: true,
            });
            continue;
          }
          for (const source of copy.sources) {
            const matches = matchContext(image.context, source).filter((p) => !image.ignored(p));
            expect({ dockerfile: relative(ROOT, image.dockerfile), line: copy.line, source, found: matches.length > 0 }).toEqual({
              dockerfile: relative(ROOT, image.dockerfile),
              line: copy.line,
              source,
              found: true,
            });
          }
        }
        for (const run of stage.instructions.filter((x) => x.keyword === 'RUN')) {
          for (const [, script] of run.args.matchAll(/npm run ([\w:-]+)/g)) expect(Object.keys(pkg.scripts)).toContain(script);
        }
      });
      expect(lastOf(image.final, 'CMD') ?? lastOf(image.final, 'ENTRYPOINT')).toBeDefined();
    }
  });

  it('points Prometheus at the gateway and at the alert rules, and Grafana at Prometheus and the dashboard', () => {
    const prometheus = services.prometheus;
    const configMount = mountsOf(prometheus).find((m) => m.target === '/etc/prometheus/prometheus.yml')!;
    expect(fromCompose(configMount.source)).toBe(join(DOCKER, 'prometheus', 'prometheus.yml'));
    expect(prometheus.command).toContain(`--config.file=${configMount.target}`);
    const config = parseYaml(readFileSync(fromCompose(configMount.source), 'utf8')) as any;

    const gatewayListen = environmentOf(services.gateway, NO_ENV).LISTEN_ADDR;
    const gatewayPort = gatewayListen.split(':').pop();
    const job = config.scrape_configs.find((j: any) => j.job_name === 'switchboard');
    expect(job.metrics_path ?? '/metrics').toBe('/metrics');
    expect(job.static_configs.flatMap((c: any) => c.targets)).toEqual([`gateway:${gatewayPort}`]);

    // The rule files glob matches where compose mounts docs/prometheus/alerts.yml.
    const alertsMount = mountsOf(prometheus).find((m) => fromCompose(m.source) === join(ROOT, 'docs', 'prometheus', 'alerts.yml'))!;
    expect(alertsMount).toBeDefined();
    expect(config.rule_files.some((g: string) => globToRegExp(g).test(alertsMount.target))).toBe(true);

    const grafana = services.grafana;
    const provisioning = mountsOf(grafana).find((m) => m.target === '/etc/grafana/provisioning')!;
    const provDir = fromCompose(provisioning.source);
    const datasources = parseYaml(readFileSync(join(provDir, 'datasources', 'prometheus.yml'), 'utf8')) as any;
    const ds = datasources.datasources[0];
    expect(ds.type).toBe('prometheus');
    const dsUrl = new URL(ds.url);
    expect(dsUrl.hostname in services).toBe(true);
    expect(dsUrl.hostname).toBe('prometheus');
    expect(dsUrl.port).toBe('9090');

    const dashboards = parseYaml(readFileSync(join(provDir, 'dashboards', 'switchboard.yml'), 'utf8')) as any;
    const providerPath = dashboards.providers[0].options.path as string;
    const dashboardMount = mountsOf(grafana).find(
      (m) => posix.relative(m.target, providerPath) === '' || !posix.relative(m.target, providerPath).startsWith('..'),
    )!;
    const hostDir = join(fromCompose(dashboardMount.source), posix.relative(dashboardMount.target, providerPath));
    expect(hostDir).toBe(join(ROOT, 'docs', 'grafana'));
    const dashboard = JSON.parse(readFileSync(join(hostDir, 'switchboard.json'), 'utf8'));
    expect(dashboard.uid).toBe('switchboard');
    expect(dashboard.templating.list.find((v: any) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
  });
});

/** Context-relative paths a COPY source (a path or a glob in its last segment) names. */
function matchContext(context: string, source: string): string[] {
  const clean = source.replace(/^\.?\//, '').replace(/\/$/, '');
  if (clean === '' || clean === '.') return ['.'];
  if (!/[*?[]/.test(clean)) return existsSync(join(context, clean)) ? [clean] : [];
  const dir = dirname(clean);
  const re = globToRegExp(clean.slice(dir === '.' ? 0 : dir.length + 1));
  const abs = join(context, dir);
  if (!existsSync(abs) || !statSync(abs).isDirectory()) return [];
  return readdirSync(abs)
    .filter((f) => re.test(f))
    .map((f) => (dir === '.' ? f : `${dir}/${f}`));
}

describe('the compose services, started outside Docker', () => {
  let pkg: BuiltPackage;
  const running: NodeRun[] = [];
  let workDir: string;

  beforeAll(() => {
    pkg = buildPackage();
    workDir = mkdtempSync(join(tmpdir(), 'switchboard-compose-'));
  }, 120000);

  afterAll(async () => {
    for (const r of running) r.child.kill('SIGKILL');
    await Promise.all(running.map((r) => r.exit));
    pkg?.remove();
    rmSync(workDir, { recursive: true, force: true });
  });

  /**
   * A service's command as the container runs it (compose entrypoint/command, else the image's
   * ENTRYPOINT/CMD), with container paths mapped to this machine: bind mounts to their source,
   * the image's WORKDIR to the built package.
   */
  function commandOf(name: string): { script: string; args: string[]; imageEnv: Record<string, string> } {
    const s = services[name];
    let argv: string[];
    let workdir = '/';
    let imageEnv: Record<string, string> = {};
    if (s.build) {
      const image = builtImage(s);
      workdir = lastOf(image.final, 'WORKDIR')?.args ?? '/';
      imageEnv = envOf(image.final);
      const entrypoint = s.entrypoint ?? (lastOf(image.final, 'ENTRYPOINT') ? execForm(lastOf(image.final, 'ENTRYPOINT')!.args) : []);
      const cmd = s.command ?? (lastOf(image.final, 'CMD') ? execForm(lastOf(image.final, 'CMD')!.args) : []);
      argv = [...entrypoint, ...cmd];
    } else {
      argv = [...(s.entrypoint ?? []), ...(s.command ?? [])];
    }
    expect(argv[0]).toBe('node');
    const containerPath = posix.resolve(workdir, argv[1]);
    const mount = mountsOf(s).find((m) => m.type === 'bind' && containerPath.startsWith(`${m.target}/`));
    let script: string;
    if (mount) script = join(fromCompose(mount.source), posix.relative(mount.target, containerPath));
    else if (s.build) script = join(pkg.dir, posix.relative(workdir, containerPath));
    else throw new Error(`${name}: ${containerPath} is neither in a bind mount nor in a built image`);
    expect({ service: name, script: relative(ROOT, script), exists: existsSync(script) }).toEqual({
      service: name,
      script: relative(ROOT, script),
      exists: true,
    });
    return { script, args: argv.slice(2), imageEnv };
  }

  /** Rewrites in-network addresses (`gateway:8080`) to the loopback ports the test chose. */
  function localize(env: Record<string, string>, ports: Record<string, number>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(env)) {
      out[k] = v.replace(/\/\/([a-z0-9-]+):(\d+)/g, (m, host: string) => (host in ports ? `//127.0.0.1:${ports[host]}` : m));
    }
    return out;
  }

  it('runs the mock backend, the gateway and the worker with the compose environment, and serves a request end to end', async () => {
    const ports = { 'mock-backend': await freePort(), gateway: await freePort() };

    // mock-backend: the node image running the bind-mounted server.js.
    const mock = commandOf('mock-backend');
    const mockEnv = environmentOf(services['mock-backend'], NO_ENV);
    expect(mockEnv.HOST).toBe('0.0.0.0');
    const mockRun = runNode(mock.script, mock.args, { env: { ...mockEnv, HOST: '127.0.0.1', PORT: String(ports['mock-backend']) }, cwd: workDir });
    running.push(mockRun);
    const mockUrl = `http://127.0.0.1:${ports['mock-backend']}`;
    await eventually(async () => (await fetch(`${mockUrl}/health`).catch(() => undefined))?.status === 200, 10000);
    const models = (await (await fetch(`${mockUrl}/v1/models`)).json()) as { data: Array<{ id: string }> };
    expect(models.data.map((m) => m.id)).toEqual(mockEnv.MODELS.split(','));
    await expectHealthcheckPasses('mock-backend', { 8000: ports['mock-backend'] });

    // gateway: the image's CMD with its ENV and the compose environment. PostgreSQL and Redis
    // do not run here: the database is a SQLite file, REDIS_URL the test's Redis if there is one.
    const gw = commandOf('gateway');
    const composeEnv = environmentOf(services.gateway, NO_ENV);
    expect(composeEnv.DATABASE_URL).toMatch(/^postgres:\/\/switchboard:[^@]+@postgres:5432\/switchboard$/);
    const gwEnv: Record<string, string> = {
      ...localize({ ...gw.imageEnv, ...composeEnv }, ports),
      LISTEN_ADDR: `127.0.0.1:${ports.gateway}`,
      DATABASE_URL: `sqlite:${join(workDir, 'switchboard.db')}`,
    };
    delete gwEnv.REDIS_URL;
    if (process.env.TEST_REDIS_URL) gwEnv.REDIS_URL = process.env.TEST_REDIS_URL;
    const gwRun = runNode(gw.script, gw.args, { env: gwEnv, cwd: pkg.dir });
    running.push(gwRun);
    const gwUrl = `http://127.0.0.1:${ports.gateway}`;
    await eventually(async () => (await fetch(`${gwUrl}/health/ready`).catch(() => undefined))?.status === 200, 30000);
    await expectHealthcheckPasses('gateway', { 8080: ports.gateway });
    // LOG_FORMAT=json from the compose file: the logs are JSON lines.
    const boot = (await eventually(
      () =>
        gwRun
          .stdout()
          .split('\n')
          .find((l) => l.includes('"context":"Boot"')),
      5000,
    ))!;
    expect(JSON.parse(boot)).toMatchObject({ providers: ['local'], admin_api: true });

    // worker: the image's ENTRYPOINT with the compose environment (PROXY_URL, BACKEND_URL, MODELS=*).
    const worker = commandOf('worker');
    const workerEnv = localize({ ...worker.imageEnv, ...environmentOf(services.worker, NO_ENV) }, ports);
    expect(workerEnv.PROXY_URL).toBe(gwUrl);
    expect(workerEnv.BACKEND_URL).toBe(mockUrl);
    const workerRun = runNode(worker.script, worker.args, { env: workerEnv, cwd: workDir });
    running.push(workerRun);
    await eventually(async () => {
      const list = (await (await fetch(`${gwUrl}/v1/models`)).json()) as { data: Array<{ id: string }> };
      return list.data.some((m) => m.id === 'mock-llama');
    }, 20000);

    const chat = await fetch(`${gwUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'mock-llama', messages: [{ role: 'user', content: 'hello compose' }] }),
    });
    expect(chat.status).toBe(200);
    const body = (await chat.json()) as any;
    expect(body.choices[0].message.content).toBe('This is the mock backend. You said: hello compose');
    expect(body.usage.completion_tokens).toBeGreaterThan(0);

    const stream = await fetch(`${gwUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'mock-llama', stream: true, messages: [{ role: 'user', content: 'stream please' }] }),
    });
    expect(stream.status).toBe(200);
    const sse = await stream.text();
    expect(sse).toContain('"content":"stream "');
    expect(sse.trimEnd().endsWith('data: [DONE]')).toBe(true);

    const embeddings = await fetch(`${gwUrl}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'mock-embed', input: ['a', 'b'] }),
    });
    expect(embeddings.status).toBe(200);
    expect(((await embeddings.json()) as any).data).toHaveLength(2);

    const metrics = await (await fetch(`${gwUrl}/metrics`)).text();
    expect(metrics).toMatch(/^switchboard_workers_connected\{provider="local"\} 1$/m);
    expect(metrics).toMatch(/^switchboard_tokens_total\{[^}]*model="mock-llama"[^}]*kind="completion"\} [1-9]/m);

    // docker compose stop: SIGTERM, each drains and exits 0.
    for (const r of [workerRun, gwRun, mockRun]) {
      r.child.kill('SIGTERM');
      expect({ exit: (await r.exit).code, stderr: r === gwRun ? r.stderr() : '' }).toEqual({ exit: 0, stderr: '' });
    }
  }, 90000);

  /** Runs a service's node-based healthcheck (compose's, else the image's) against the local port. */
  async function expectHealthcheckPasses(name: string, portMap: Record<number, number>): Promise<void> {
    const s = services[name];
    const test: string[] = s.healthcheck?.test ? s.healthcheck.test.slice(1) : healthcheckOf(builtImage(s).final)!;
    const local = test.map((a) => a.replace(/127\.0\.0\.1:(\d+)/g, (m, p: string) => (portMap[Number(p)] ? `127.0.0.1:${portMap[Number(p)]}` : m)));
    // Exec form (["node", ...]) or shell form (/bin/sh -c "node ..."): both with this node first in PATH.
    if (local[0] === '/bin/sh') expect(local[2]).toMatch(/^node /);
    else expect(local[0]).toBe('node');
    const env = { PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };
    const [file, ...args] = local[0] === 'node' ? [process.execPath, ...local.slice(1)] : local;
    expect(() => execFileSync(file, args, { stdio: 'ignore', timeout: 10000, env })).not.toThrow();
  }
});
