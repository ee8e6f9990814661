import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config';
import { loadWorkerConfig } from '../../src/worker/config';
import { DEPENDS_ON_CONDITIONS, environmentOf, interpolate, SERVICE_KEYS, TOP_LEVEL_KEYS } from '../cli/compose';

/**
 * docker/compose.cluster.yml, checked without a Docker engine: compose-spec keys, the gateways'
 * environment accepted by the real configuration loader (cluster mode on, PostgreSQL, distinct
 * replica ids), the workers' gateway lists accepted by the daemon's loader, and HAProxy pointing
 * at the replicas with a readiness check.
 */
type Service = Record<string, any>;
const FILE = join(__dirname, '..', '..', 'docker', 'compose.cluster.yml');
const text = readFileSync(FILE, 'utf8');
// `<<` merge keys (YAML 1.1) carry the shared gateway and worker parts, as Compose reads them.
const compose = parseYaml(text, { merge: true }) as { services: Record<string, Service>; configs: Record<string, { content: string }>; [k: string]: unknown };
const ENV = { CLUSTER_SECRET: 'c'.repeat(64) };
const gateways = Object.entries(compose.services).filter(([, s]) => environmentOf(s, ENV).CLUSTER_REDIS_URL !== undefined);

describe('docker/compose.cluster.yml', () => {
  it('uses only compose-spec keys, and depends only on services that exist', () => {
    expect(Object.keys(compose).filter((k) => !k.startsWith('x-') && !TOP_LEVEL_KEYS.includes(k))).toEqual([]);
    for (const [name, service] of Object.entries(compose.services)) {
      expect([name, Object.keys(service).filter((k) => !SERVICE_KEYS.includes(k))]).toEqual([name, []]);
      const deps = Array.isArray(service.depends_on) ? service.depends_on : Object.keys(service.depends_on ?? {});
      for (const dep of deps) expect([name, dep, dep in compose.services]).toEqual([name, dep, true]);
      for (const cond of Object.values<{ condition: string }>(Array.isArray(service.depends_on) ? {} : (service.depends_on ?? {}))) {
        expect(DEPENDS_ON_CONDITIONS).toContain(cond.condition);
      }
    }
  });

  it('refuses to start without CLUSTER_SECRET (no default secret)', () => {
    expect(() => environmentOf(gateways[0][1], {})).toThrow(/CLUSTER_SECRET is required/);
  });

  it('runs two gateways whose environment the gateway accepts: cluster mode on PostgreSQL, distinct replica ids', () => {
    expect(gateways.map(([name]) => name)).toEqual(['gateway-1', 'gateway-2']);
    const configs = gateways.map(([, s]) => loadConfig(environmentOf(s, ENV)));
    for (const c of configs) {
      expect(c.cluster.redisUrl).toBe('redis://redis:6379');
      expect(c.databaseUrl).toMatch(/^postgres:\/\//);
      expect(c.redisUrl).toBe('redis://redis:6379');
    }
    expect(configs.map((c) => c.cluster.replicaId)).toEqual(['gateway-1', 'gateway-2']);
    expect(configs.map((c) => c.cluster.advertiseUrl)).toEqual(['http://gateway-1:8080', 'http://gateway-2:8080']);
  });

  it('gives each worker both replicas, in a different order, as the daemon reads them', () => {
    const workers = Object.entries(compose.services).filter(([, s]) => environmentOf(s, ENV).PROXY_URL !== undefined);
    const lists = workers.map(([, s]) => loadWorkerConfig([], environmentOf(s, ENV)).config!.proxyUrls);
    expect(lists).toEqual([
      ['ws://gateway-1:8080', 'ws://gateway-2:8080'],
      ['ws://gateway-2:8080', 'ws://gateway-1:8080'],
    ]);
  });

  it('balances over both replicas with a readiness check, keeping WebSockets open', () => {
    const lb = compose.services.lb;
    expect(lb.configs).toEqual([{ source: 'haproxy', target: '/usr/local/etc/haproxy/haproxy.cfg' }]);
    const cfg = interpolate(compose.configs.haproxy.content, ENV);
    expect(cfg).toMatch(/option httpchk GET \/health\/ready/);
    expect(cfg).toMatch(/timeout tunnel \S+/);
    const servers = [...cfg.matchAll(/^\s*server (\S+) (\S+):(\d+)/gm)].map((m) => `${m[2]}:${m[3]}`);
    expect(servers).toEqual(['gateway-1:8080', 'gateway-2:8080']);
  });
});
