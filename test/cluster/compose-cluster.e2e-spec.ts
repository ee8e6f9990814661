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
 * at the replicas with a readiness check, browsers kept on one replica by a cookie and the API not.
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
    const cfg = haproxySections();
    expect(cfg.get('defaults')).toMatch(/timeout tunnel \S+/);
    for (const backend of ['backend gateways', 'backend dashboard']) {
      const text = cfg.get(backend)!;
      expect([backend, text]).toEqual([backend, expect.stringMatching(/option httpchk GET \/health\/ready/)]);
      expect([backend, serversOf(text)]).toEqual([backend, ['gateway-1:8080', 'gateway-2:8080']]);
    }
  });

  // Dashboard sign-in sessions live in one replica's memory (docs/cluster.md, "Dashboard sign-in (SSO)").
  it('keeps a browser on one replica (a cookie for /dashboard, /auth/ and whatever carries it); the API stays on leastconn without stickiness', () => {
    const cfg = haproxySections();
    const api = cfg.get('backend gateways')!;
    expect(api).toMatch(/^\s*balance leastconn$/m);
    expect(api).not.toMatch(/^\s*(cookie|stick|balance source)/m);
    const front = cfg.get('frontend switchboard')!;
    expect(front).toMatch(/^\s*default_backend gateways$/m);
    expect(front).toMatch(/^\s*acl dashboard path \/dashboard$/m);
    expect(front).toMatch(/^\s*acl dashboard path_beg \/dashboard\/ \/auth\/$/m);
    expect(front).toMatch(/^\s*acl pinned req\.cook\(SWITCHBOARD_REPLICA\) -m found$/m);
    expect(front).toMatch(/^\s*use_backend dashboard if dashboard or pinned$/m);
    const sticky = cfg.get('backend dashboard')!;
    expect(sticky).toMatch(/^\s*cookie SWITCHBOARD_REPLICA insert indirect nocache httponly attr "SameSite=Lax"$/m);
    // Each server names itself in the cookie, distinctly.
    const ids = [...sticky.matchAll(/^\s*server \S+ \S+ .*\bcookie (\S+)/gm)].map((m) => m[1]);
    expect(ids).toEqual(['gateway-1', 'gateway-2']);
  });
});

/** The HAProxy configuration by section (`defaults`, `frontend switchboard`, `backend gateways`, …), comments left out. */
function haproxySections(): Map<string, string> {
  const sections = new Map<string, string>();
  let current = '';
  for (const line of interpolate(compose.configs.haproxy.content, ENV).split('\n')) {
    const text = line.replace(/#.*$/, '').trimEnd();
    if (!text.trim()) continue;
    if (/^\S/.test(text)) sections.set((current = text.trim()), '');
    else sections.set(current, `${sections.get(current)}${text.trim()}\n`);
  }
  return sections;
}

function serversOf(section: string): string[] {
  return [...section.matchAll(/^server (\S+) (\S+):(\d+)/gm)].map((m) => `${m[2]}:${m[3]}`);
}
