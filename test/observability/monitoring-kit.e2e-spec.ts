import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { startGateway, TestGateway } from '../support/gateway';
import { chat, eventually, post } from '../support/http';
import { ScriptedWorker } from '../support/scripted-worker';
import { parsePrometheusText } from './prometheus-text';
import { familyOfSeries, metricNamesIn } from './promql';

/**
 * The monitoring kit: docs/grafana/switchboard.json and docs/prometheus/alerts.yml. Every metric
 * their expressions query must be one the gateway exposes (a HELP and a TYPE line in /metrics;
 * histogram _bucket/_sum/_count series count as their family), and the dashboard must show every
 * switchboard_* family.
 */
const ROOT = join(__dirname, '..', '..');
const dashboard = JSON.parse(readFileSync(join(ROOT, 'docs', 'grafana', 'switchboard.json'), 'utf8'));
const alerts = parseYaml(readFileSync(join(ROOT, 'docs', 'prometheus', 'alerts.yml'), 'utf8'));
/** Series Prometheus makes itself for every target; not in the gateway's exposition. */
const SCRAPE_SERIES = new Set(['up']);

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: Array<{ expr: string; refId: string }>;
  gridPos: { x: number; y: number; w: number; h: number };
}
const panels: Panel[] = dashboard.panels;
const queryPanels = panels.filter((p) => p.type !== 'row');
const rules: Array<Record<string, any>> = alerts.groups.flatMap((g: { rules: unknown[] }) => g.rules);

/** Expression → where it comes from, for messages. */
function expressions(): Array<{ where: string; expr: string }> {
  const out: Array<{ where: string; expr: string }> = [];
  for (const p of queryPanels) for (const t of p.targets ?? []) out.push({ where: `dashboard panel "${p.title}" ${t.refId}`, expr: t.expr });
  for (const v of dashboard.templating.list) {
    if (v.type !== 'query') continue;
    const q: string = typeof v.query === 'string' ? v.query : v.query.query;
    // Grafana's label_values(<series selector>, <label>): the selector is the PromQL part.
    const m = /^label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)$/s.exec(q.trim());
    out.push({ where: `dashboard variable ${v.name}`, expr: m ? m[1] : q });
  }
  for (const r of rules) out.push({ where: `alert ${r.alert}`, expr: r.expr });
  return out;
}

describe('metricNamesIn', () => {
  it('finds the selected metrics, not functions, aggregations, label names, strings or variables', () => {
    expect(
      metricNamesIn('histogram_quantile(0.95, sum by (le, provider) (rate(a_seconds_bucket{provider=~"$provider",x="by (y)"}[$__rate_interval])))'),
    ).toEqual(['a_seconds_bucket']);
    expect(metricNamesIn('b > 0 and on (provider) c == 0 or sum without (instance) (d) unless e offset 5m')).toEqual(['b', 'c', 'd', 'e']);
    expect(metricNamesIn('label_values(f{instance=~"$instance"}, provider)')).toEqual(['f', 'provider']);
    expect(metricNamesIn('sum(rate(g[5m])) by (code) / 1e3')).toEqual(['g']);
  });
});

describe('docs/grafana/switchboard.json', () => {
  it('is a dashboard Grafana can provision: uid, unique panel ids, grid positions, one datasource variable', () => {
    expect(dashboard).toMatchObject({ uid: 'switchboard', title: 'Switchboard', schemaVersion: expect.any(Number) });
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels) {
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      expect(p.gridPos.w).toBeGreaterThan(0);
    }
    for (const p of queryPanels) {
      expect({ panel: p.title, datasource: p.datasource?.uid }).toEqual({ panel: p.title, datasource: '${datasource}' });
      expect(p.targets?.length).toBeGreaterThan(0);
      for (const t of p.targets ?? []) expect(t.expr.trim()).not.toBe('');
    }
    expect(dashboard.templating.list.find((v: { name: string }) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
  });

  it('has the panels the runbook names', () => {
    const titles = queryPanels.map((p) => p.title);
    for (const t of [
      'Requests / s by status',
      'Rejections / s by code',
      'Request duration',
      'Time to first byte',
      'Queue depth',
      'Queue wait',
      'Worker slots by state',
      'Workers connected',
      'Requeues / s',
      'Cancellations / s by reason',
      'Tokens / s by tenant',
      'Worker ejections',
    ]) {
      expect(titles).toContain(t);
    }
  });
});

describe('docs/prometheus/alerts.yml', () => {
  it('is a Prometheus rule file: named groups of alerting rules with severity, summary and description', () => {
    expect(alerts.groups.length).toBeGreaterThan(0);
    const names = new Set<string>();
    for (const g of alerts.groups) {
      expect(typeof g.name).toBe('string');
      for (const r of g.rules) {
        expect(Object.keys(r).every((k) => ['alert', 'expr', 'for', 'keep_firing_for', 'labels', 'annotations'].includes(k))).toBe(true);
        expect(r.alert).toMatch(/^Switchboard[A-Z][A-Za-z]+$/);
        expect(names.has(r.alert)).toBe(false);
        names.add(r.alert);
        expect(typeof r.expr).toBe('string');
        expect(r.for).toMatch(/^\d+[smh]$/);
        expect(['critical', 'warning']).toContain(r.labels.severity);
        expect(typeof r.annotations.summary).toBe('string');
        expect(typeof r.annotations.description).toBe('string');
      }
    }
  });

  it('covers missing workers, queue saturation, errors, heartbeat timeouts and auth failure bursts', () => {
    const uses = (metric: string) => rules.filter((r) => metricNamesIn(r.expr).includes(metric)).map((r) => r.alert as string);
    expect(uses('switchboard_workers_connected')).toEqual(expect.arrayContaining(['SwitchboardNoWorkers', 'SwitchboardQueuedWithoutWorkers']));
    expect(uses('switchboard_rejections_total')).toContain('SwitchboardQueueFull');
    expect(uses('switchboard_queue_wait_seconds_bucket')).toContain('SwitchboardQueueWaitHigh');
    expect(uses('switchboard_requests_total')).toContain('SwitchboardHighErrorRate');
    expect(uses('switchboard_worker_heartbeat_timeouts_total')).toContain('SwitchboardWorkerHeartbeatTimeouts');
    expect(uses('switchboard_worker_auth_failures_total')).toContain('SwitchboardWorkerAuthFailureBurst');
  });
});

describe('the dashboard and the alerts against a running gateway', () => {
  let gw: TestGateway;
  let exposed: Set<string>;
  let metricsText: string;

  beforeAll(async () => {
    gw = await startGateway({ HEARTBEAT_INTERVAL_SECS: '0.05', HEARTBEAT_TIMEOUT_SECS: '0.2' });
    // A little traffic: a request for a model nobody serves, a refused worker, a silent worker.
    expect((await post(gw.url, '/v1/chat/completions', chat('nobody-serves-this'))).status).toBe(404);
    const refused = await ScriptedWorker.connect(gw.workerUrl, { secret: 'wrong-secret' });
    await refused.closed;
    const { worker: silent } = await ScriptedWorker.register(gw.workerUrl, { models: ['m'] });
    expect(await silent.closed).toEqual({ code: 1000, reason: 'worker heartbeat timed out' });

    metricsText = await (await fetch(`${gw.url}/metrics`)).text();
    parsePrometheusText(metricsText); // strict: the exposition is valid
    const help = new Set([...metricsText.matchAll(/^# HELP (\S+) /gm)].map((m) => m[1]));
    const type = new Set([...metricsText.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    exposed = new Set([...help].filter((n) => type.has(n)));
  });

  afterAll(async () => {
    await gw?.close();
  });

  it('queries only metrics the gateway exposes', () => {
    const unknown: string[] = [];
    for (const { where, expr } of expressions()) {
      for (const name of metricNamesIn(expr)) {
        if (SCRAPE_SERIES.has(name)) continue;
        if (!familyOfSeries(name, exposed)) unknown.push(`${where}: ${name}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it('shows every switchboard_* family on the dashboard', () => {
    const shown = new Set(queryPanels.flatMap((p) => (p.targets ?? []).flatMap((t) => metricNamesIn(t.expr))).map((n) => familyOfSeries(n, exposed) ?? n));
    const families = [...exposed].filter((n) => n.startsWith('switchboard_'));
    expect(families.length).toBeGreaterThanOrEqual(16);
    expect(families.filter((f) => !shown.has(f))).toEqual([]);
  });

  it('counts the heartbeat timeout and the refused worker the alerts look at', () => {
    expect(metricsText).toMatch(/^switchboard_worker_heartbeat_timeouts_total\{provider="local"\} 1$/m);
    expect(metricsText).toMatch(/^switchboard_worker_auth_failures_total\{reason="bad_secret"\} 1$/m);
    expect(metricsText).toMatch(/^switchboard_requests_total\{[^}]*status="404"[^}]*\} 1$/m);
  });
});

/** An executable on PATH, if there is one (promtool and prometheus are optional). */
function which(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return join(dir, command);
    } catch {
      /* not here */
    }
  }
  return undefined;
}

const PROMTOOL = which('promtool');

/** Runs promtool; resolves with its exit status and everything it printed. */
function promtool(args: string[], cwd?: string): { status: number | null; output: string } {
  const r = spawnSync(PROMTOOL!, args, { cwd, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}
const PROMETHEUS = which('prometheus');

/**
 * With Prometheus' own tools, when installed (not in CI): promtool checks the rule file and runs
 * its unit tests (docs/prometheus/alerts.test.yml), and a real Prometheus scrapes a gateway,
 * evaluates every alert rule and answers every dashboard query without a PromQL error.
 */
(PROMTOOL ? describe : describe.skip)('docs/prometheus with promtool', () => {
  it('passes `promtool check rules` and the rule unit tests', () => {
    const dir = join(ROOT, 'docs', 'prometheus');
    expect(promtool(['check', 'rules', join(dir, 'alerts.yml')])).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') });
    expect(promtool(['test', 'rules', 'alerts.test.yml'], dir)).toEqual({ status: 0, output: expect.stringContaining('SUCCESS') });
  });

  it('passes `promtool check config` for docker/prometheus/prometheus.yml', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-promtool-'));
    try {
      // The compose file mounts the rules at /etc/prometheus/rules/; point at a local copy.
      mkdirSync(join(dir, 'rules'));
      writeFileSync(join(dir, 'rules', 'switchboard-alerts.yml'), readFileSync(join(ROOT, 'docs', 'prometheus', 'alerts.yml')));
      const config = readFileSync(join(ROOT, 'docker', 'prometheus', 'prometheus.yml'), 'utf8').replaceAll('/etc/prometheus/rules/', `${dir}/rules/`);
      writeFileSync(join(dir, 'prometheus.yml'), config);
      expect(promtool(['check', 'config', join(dir, 'prometheus.yml')])).toEqual({ status: 0, output: expect.stringContaining('SUCCESS: 1 rule files found') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

(PROMETHEUS ? describe : describe.skip)('a real Prometheus scraping a gateway', () => {
  let gw: TestGateway;
  let prometheus: ChildProcess;
  let exited: Promise<unknown>;
  let promUrl: string;
  let dir: string;

  const query = async (q: string): Promise<{ status: string; error?: string; data?: { result: unknown[] } }> =>
    (await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`)).json() as Promise<{ status: string; error?: string; data?: { result: unknown[] } }>;

  beforeAll(async () => {
    gw = await startGateway();
    dir = mkdtempSync(join(tmpdir(), 'switchboard-prometheus-'));
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    promUrl = `http://127.0.0.1:${port}`;
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        `rule_files: ["${join(ROOT, 'docs', 'prometheus', 'alerts.yml')}"]`,
        'scrape_configs:',
        '  - job_name: switchboard',
        `    static_configs: [{ targets: ["${new URL(gw.url).host}"] }]`,
      ].join('\n'),
    );
    prometheus = spawn(
      PROMETHEUS!,
      [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
      {
        stdio: 'ignore',
      },
    );
    exited = new Promise((resolve) => prometheus.on('exit', resolve));
    await eventually(async () => {
      const r = await query('up{job="switchboard"} == 1').catch(() => undefined);
      return r?.status === 'success' && (r.data?.result.length ?? 0) > 0;
    }, 30000);
  }, 60000);

  afterAll(async () => {
    prometheus?.kill('SIGTERM');
    await exited;
    await gw?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers every dashboard query without an error, with data where the gateway has series', async () => {
    for (const { where, expr } of expressions()) {
      const q = expr.replace(/\$__rate_interval/g, '1m').replace(/\$(instance|provider)\b/g, '.*');
      const r = await query(q);
      expect({ where, status: r.status, error: r.error }).toEqual({ where, status: 'success', error: undefined });
    }
    const workers = await query('sum(switchboard_workers_connected{instance=~".*",provider=~".*"})');
    expect(workers.data?.result).toHaveLength(1);
  });

  it('evaluates every alert rule without an error', async () => {
    const rules = await eventually(async () => {
      const body = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
        data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> };
      };
      const all = body.data.groups.flatMap((g) => g.rules);
      return all.length > 0 && all.every((r) => r.health !== 'unknown') ? all : undefined;
    }, 15000);
    expect(rules!.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.lastError}`)).toEqual([]);
    expect(rules!.map((r) => r.name).sort()).toEqual(alerts.groups.flatMap((g: { rules: Array<{ alert: string }> }) => g.rules.map((r) => r.alert)).sort());
  });
});
