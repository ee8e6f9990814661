'use strict';
/* The cluster part of `npm run bench` (issue 18): what forwarding a request between two replicas costs.
 *
 * Starts its own redis-server (free port, no persistence), a fresh PostgreSQL schema
 * (`bench_cluster_<pid>` of BENCH_DATABASE_URL / TEST_DATABASE_URL / postgres://postgres@127.0.0.1:5432/test,
 * dropped at the end), the fake backend of bench/lib/backend.js, two built gateways (dist/main.js) in
 * cluster mode, r1 and r2, and one worker daemon per replica: model `m-a` only on r1's, `m-b` only on
 * r2's. A request for m-a sent to r1 is local; sent to r2 it has to be forwarded to r1.
 *
 * At concurrency 1, non-streaming and streaming, it sends each path's requests in short blocks, local
 * and forwarded taking turns (and turns at going first), so that the drift of a shared machine falls
 * on both alike. It measures: latency p50/p99 and TTFB p50 (all blocks pooled); the CPU time (utime + stime of
 * /proc/<pid>/stat) of BOTH gateway processes per request; the Redis commands per request (the sum of
 * `INFO commandstats` calls around each phase, the INFO readings themselves left out). It prints a table,
 * the forwarded/local comparison, the machine's floor for the two crossings forwarding adds (a bare
 * WebSocket round trip between two processes, bench/lib/hop-floor.js) and issue 18's three targets
 * with pass/fail words (nothing asserts).
 *
 * Before measuring it waits for both replicas to list each other (GET /admin/cluster) and for r2 to
 * list m-a (GET /v1/models) and answer one request for it (a build that serves m-a without listing it
 * is measured too); when r2 does not serve it, it prints "forwarding not available on this build" and
 * measures the local path only.
 *
 * Run by bench/run.js (`--only cluster`, or the default run when redis-server and PostgreSQL are there).
 */
const { join } = require('node:path');
const { Agent } = require('undici');
const { cpuMs, spawnNode, stop, freePort, waitFor } = require('./lib/proc');
const { drive, pct, fmt, fmtCpu } = require('./lib/load');
const { startBackend, chatBody } = require('./lib/backend');
const { clusterUnavailable, freshSchema, startRedis, commandStats, commandDelta } = require('./lib/cluster-infra');
const { hopFloor } = require('./lib/hop-floor');

const WORKER_SECRET = 'bench-secret';
const ADMIN_TOKEN = 'bench-admin-token';
const CLUSTER_SECRET = 'bench-cluster-secret-0123456789abcdef';
const FORWARDING_WAIT_MS = 10000;
const TARGETS = { addedP50Ms: 0.5, cpuRatio: 2.2, redisPerRequest: 2 };

async function startReplica({ dist, id, redisUrl, databaseUrl, nodeFlags }) {
  const port = await freePort();
  const child = spawnNode(
    join(dist, 'main.js'),
    [],
    {
      LISTEN_ADDR: `127.0.0.1:${port}`,
      WORKER_SECRET,
      ADMIN_TOKEN,
      DATABASE_URL: databaseUrl,
      CLUSTER_REDIS_URL: redisUrl,
      CLUSTER_SECRET,
      CLUSTER_REPLICA_ID: id,
      LOG_LEVEL: 'error',
      // Tracing off means off even when the caller's shell has OTEL_* set.
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
    },
    { nodeFlags },
  );
  if (nodeFlags.length) console.error(`bench: cluster replica ${id} is pid ${child.pid}`);
  return { id, child, url: `http://127.0.0.1:${port}` };
}

function startWorker(dist, replica, backendUrl, model) {
  return spawnNode(join(dist, 'worker/main.js'), [
    '--proxy-url',
    replica.url,
    '--worker-secret',
    WORKER_SECRET,
    '--backend-url',
    backendUrl,
    '--models',
    model,
    '--worker-name',
    `bench-${model}`,
    '--max-concurrency',
    '4',
    '--log-level',
    'error',
  ]);
}

const getJson = async (url, headers = {}) => {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return res.json();
};
const modelsOf = async (replica) => (await getJson(`${replica.url}/v1/models`)).data.map((m) => m.id);
const membersOf = async (replica) => (await getJson(`${replica.url}/admin/cluster`, { authorization: `Bearer ${ADMIN_TOKEN}` })).members.map((m) => m.id);

/**
 * Whether r2 serves m-a (whose worker is on r1): it should list m-a within FORWARDING_WAIT_MS and answer
 * a request for it. A build that forwards without listing remote models gets one request anyway (a few
 * seconds at most); either way what failed goes to stderr.
 */
async function forwardingWorks(r2) {
  let listed = true;
  try {
    await waitFor(async () => (await modelsOf(r2)).includes('m-a'), FORWARDING_WAIT_MS, 'r2 to list m-a (the model of the worker on r1)');
  } catch (e) {
    console.error(`bench: cluster: ${e.message}`);
    listed = false;
  }
  try {
    const res = await fetch(`${r2.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chatBody('m-a', false),
      signal: AbortSignal.timeout(listed ? FORWARDING_WAIT_MS : 3000),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`r2 answered ${res.status} to a request for m-a`);
    if (!listed) console.error('bench: cluster: r2 serves m-a without listing it on /v1/models; measuring forwarding');
    return true;
  } catch (e) {
    if (listed) console.error(`bench: cluster: ${e.message}`);
    return false;
  }
}

/** One measured phase: `total` requests at concurrency 1, with both replicas' CPU and the Redis commands around it. */
async function phase(replicas, redisPort, url, total, payload, dispatcher) {
  const cpuBefore = replicas.map((r) => cpuMs(r.child.pid));
  const redisBefore = await commandStats(redisPort);
  const load = await drive(url, total, [payload], { concurrency: 1, dispatcher });
  const redisAfter = await commandStats(redisPort);
  const cpu = replicas.map((r, i) => cpuMs(r.child.pid) - cpuBefore[i]);
  return { load, cpu, redis: commandDelta(redisBefore, redisAfter) };
}

function emptyRow(workload, path) {
  return { workload, path, requests: 0, failures: 0, latencies: [], ttfbs: [], cpu: [0, 0], redis: 0, byCommand: new Map() };
}

function addTo(row, total, { load, cpu, redis }) {
  row.requests += total;
  row.failures += load.failures;
  row.latencies.push(...load.latencies);
  row.ttfbs.push(...load.ttfbs);
  cpu.forEach((ms, i) => (row.cpu[i] += ms));
  row.redis += redis.total;
  for (const [name, n] of redis.byCommand) row.byCommand.set(name, (row.byCommand.get(name) ?? 0) + n);
}

function summarize(row) {
  const cpuR1 = row.cpu[0] / row.requests;
  const cpuR2 = row.cpu[1] / row.requests;
  return {
    ...row,
    p50: pct(row.latencies, 50),
    p99: pct(row.latencies, 99),
    ttfb50: pct(row.ttfbs, 50),
    cpuR1,
    cpuR2,
    cpuBoth: cpuR1 + cpuR2,
    redisPerRequest: row.redis / row.requests,
  };
}

const PATHS = { local: 'local (m-a at r1)', forwarded: 'forwarded (m-a at r2 → r1)' };
const verdict = (ok) => (ok ? 'pass' : 'FAIL');
const signed = (n, format) => (n < 0 ? format(n) : `+${format(n)}`);

function report(rows, forwarding, o) {
  console.log(
    `Cluster — 2 replicas (r1, r2) on one redis-server and one PostgreSQL schema, a worker daemon on each (m-a on r1, m-b on r2); ` +
      `concurrency 1, ${o.requests} non-streaming / ${o.streamRequests} streaming (${o.chunks} chunks) requests per path in ${o.rounds} alternating blocks, loopback`,
  );
  console.log('| workload | path | requests | p50 ms | p99 ms | TTFB p50 ms | r1 CPU ms/req | r2 CPU ms/req | both CPU ms/req | Redis cmds/req | failures |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.workload} | ${PATHS[r.path]} | ${r.requests} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.ttfb50)} | ${fmtCpu(r.cpuR1)} | ${fmtCpu(r.cpuR2)} | ` +
        `${fmtCpu(r.cpuBoth)} | ${r.redisPerRequest.toFixed(3)} | ${r.failures} |`,
    );
  }
  for (const path of Object.keys(PATHS)) {
    const ofPath = rows.filter((r) => r.path === path);
    if (ofPath.length === 0) continue;
    const commands = new Map();
    for (const r of ofPath) for (const [name, n] of r.byCommand) commands.set(name, (commands.get(name) ?? 0) + n);
    const listed = [...commands].sort((a, b) => b[1] - a[1]).map(([name, n]) => `${name} ${n}`);
    const total = ofPath.reduce((s, r) => s + r.requests, 0);
    console.log(`Redis commands during the ${path} phases (${total} requests; commands run by Lua scripts included): ${listed.join(', ') || 'none'}`);
  }
  if (!forwarding) console.log('forwarding not available on this build: only the local figures above (r2 never listed m-a or did not serve it)');
  if (!forwarding || rows.some((r) => !rows.find((o) => o.workload === r.workload && o.path !== r.path))) {
    console.log('');
    return;
  }
  const pairs = ['non-streaming', 'streaming'].map((w) => ({
    workload: w,
    local: rows.find((r) => r.workload === w && r.path === 'local'),
    forwarded: rows.find((r) => r.workload === w && r.path === 'forwarded'),
  }));
  console.log('');
  console.log('| workload | added p50 ms (forwarded − local) | added TTFB p50 ms | CPU both replicas: forwarded / local | added CPU ms/req |');
  console.log('|---|---|---|---|---|');
  for (const { workload, local, forwarded } of pairs) {
    console.log(
      `| ${workload} | ${signed(forwarded.p50 - local.p50, fmt)} | ${signed(forwarded.ttfb50 - local.ttfb50, fmt)} | ` +
        `${(forwarded.cpuBoth / local.cpuBoth).toFixed(2)}× | ${signed(forwarded.cpuBoth - local.cpuBoth, fmtCpu)} |`,
    );
  }
  if (o.floor !== undefined) {
    console.log(
      `floor: a bare WebSocket round trip between two processes on this machine (loopback, paced like these requests, no gateway code), ` +
        `p50 ${fmt(o.floor)} ms — the two socket crossings a forwarded request adds cost at least this here`,
    );
  }
  const forwardedRows = pairs.map((p) => p.forwarded);
  const redisPerRequest = forwardedRows.reduce((s, r) => s + r.redis, 0) / forwardedRows.reduce((s, r) => s + r.requests, 0);
  console.log('targets (issue 18):');
  for (const { workload, local, forwarded } of pairs) {
    const added = forwarded.p50 - local.p50;
    console.log(
      `- added latency of a forwarded request, p50, ${workload}: ${signed(added, fmt)} ms (≤ ${TARGETS.addedP50Ms} ms) ${verdict(added <= TARGETS.addedP50Ms)}`,
    );
  }
  for (const { workload, local, forwarded } of pairs) {
    const ratio = forwarded.cpuBoth / local.cpuBoth;
    console.log(
      `- CPU per forwarded request over both replicas, ${workload}: ${ratio.toFixed(2)}× local (≤ ${TARGETS.cpuRatio}×) ${verdict(ratio <= TARGETS.cpuRatio)}`,
    );
  }
  console.log(
    `- Redis commands per forwarded request, nothing queued: ${redisPerRequest.toFixed(3)} (≤ ${TARGETS.redisPerRequest}) ${verdict(redisPerRequest <= TARGETS.redisPerRequest)}`,
  );
  console.log('');
}

/**
 * The whole part. Options: dist (build directory), requests / streamRequests per path, rounds (the
 * blocks each path's requests are sent in, local and forwarded taking turns), warmup (requests per path
 * and workload before measuring), chunks, nodeFlags for the gateways, only (the paths to measure:
 * `local`, `forwarded`; one alone, for a profile of it).
 */
async function clusterPart({
  dist = 'dist',
  requests = 2000,
  streamRequests = 1000,
  rounds = 50,
  warmup = 200,
  chunks = 50,
  nodeFlags = [],
  only = ['local', 'forwarded'],
} = {}) {
  const redis = await startRedis(await freePort());
  const started = [];
  const agents = [];
  let schema;
  let backend;
  try {
    schema = await freshSchema();
    backend = await startBackend({ chunks, models: ['m-a', 'm-b'] });
    const backendUrl = `http://127.0.0.1:${backend.address().port}`;
    const common = { dist, redisUrl: redis.url, databaseUrl: schema.url, nodeFlags };
    // Together, on the empty schema: the migration lock lets both boot.
    const replicas = await Promise.all(['r1', 'r2'].map((id) => startReplica({ ...common, id })));
    started.push(...replicas.map((r) => r.child));
    const [r1, r2] = replicas;
    for (const r of replicas) await waitFor(async () => (await fetch(`${r.url}/health/ready`)).ok, 60000, `replica ${r.id} to become ready`);
    for (const r of replicas) {
      await waitFor(async () => (await membersOf(r)).length === 2, 30000, `replica ${r.id} to list both replicas on /admin/cluster`);
    }
    started.push(startWorker(dist, r1, backendUrl, 'm-a'), startWorker(dist, r2, backendUrl, 'm-b'));
    await waitFor(async () => (await modelsOf(r1)).includes('m-a'), 30000, 'the worker of m-a to register at r1');
    await waitFor(async () => (await modelsOf(r2)).includes('m-b'), 30000, 'the worker of m-b to register at r2');
    const forwarding = await forwardingWorks(r2);

    const workloads = [
      ['non-streaming', Math.ceil(requests / rounds), chatBody('m-a', false)],
      ['streaming', Math.ceil(streamRequests / rounds), chatBody('m-a', true)],
    ];
    // One client connection per path, kept across blocks.
    const paths = [
      ['local', r1.url],
      ['forwarded', r2.url],
    ];
    const targets = paths
      .filter(([path]) => only.includes(path) && (path === 'local' || forwarding))
      .map(([path, url]) => {
        const dispatcher = new Agent({ connections: 1, pipelining: 1 });
        agents.push(dispatcher);
        return [path, url, dispatcher];
      });
    // Warm up every measured path (JIT, connection pools, the internal link) before measuring.
    for (const [, url, dispatcher] of targets) {
      for (const [, , payload] of workloads) await drive(url, warmup, [payload], { concurrency: 1, dispatcher });
    }

    const rows = new Map();
    for (const [path] of targets) for (const [workload] of workloads) rows.set(`${workload}/${path}`, emptyRow(workload, path));
    const from = process.hrtime.bigint() / 1000n;
    for (let round = 0; round < rounds; round++) {
      // Alternate which path goes first, so drift on a shared machine does not favour one.
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const [path, url, dispatcher] of order) {
        for (const [workload, total, payload] of workloads) {
          addTo(rows.get(`${workload}/${path}`), total, await phase(replicas, redis.port, url, total, payload, dispatcher));
        }
      }
    }
    // Same monotonic clock as V8 profile timestamps: bench/profile-top.js --from/--to cuts to the measured blocks.
    const to = process.hrtime.bigint() / 1000n;
    if (nodeFlags.length)
      console.error(
        `bench: cluster ${targets.map(([p]) => p).join(' + ')} measured: --from ${from} --to ${to} (r1 pid ${r1.child.pid}, r2 pid ${r2.child.pid})`,
      );
    const summary = [...rows.values()].map(summarize);
    // Measured after the requests, on the same machine; a failure costs only this line of the report.
    const floor = forwarding ? await hopFloor().catch((e) => void console.error(`bench: cluster: floor unavailable: ${e.message}`)) : undefined;
    report(summary, forwarding, { rounds, requests: workloads[0][1] * rounds, streamRequests: workloads[1][1] * rounds, chunks, floor });
    return { forwarding, rows: summary };
  } finally {
    for (const agent of agents) await agent.close();
    for (const child of started.reverse()) await stop(child);
    backend?.close();
    await redis.stop();
    await schema?.drop().catch((e) => console.error(`bench: cluster: could not drop schema ${schema.schema}: ${e.message}`));
  }
}

module.exports = { clusterPart, clusterUnavailable };
