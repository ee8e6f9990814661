#!/usr/bin/env node
/* Gateway benchmarks, all on loopback, bounded in count and time. Three parts:
 *
 * relay — a fake OpenAI-compatible backend (instant answers, so the gateway's own cost dominates),
 *   the built gateway (dist/main.js) and the built worker daemon (dist/worker/main.js); drives the
 *   same load at the backend directly and through gateway + daemon and prints the ratios.
 * fleet — for each N in --fleet (default 1,1000): a fresh gateway and a fake worker fleet
 *   (bench/fleet.js, its own process) of N WebSocket workers, worker i serving only `fleet-<i>`;
 *   requests go round-robin over the N models, so the gateway routes over N connected workers.
 * cluster — two replicas in cluster mode (own redis-server, a fresh PostgreSQL schema), a worker
 *   daemon on each: a request served locally against one forwarded between the replicas, at
 *   concurrency 1 (bench/cluster.js). In the default run only when redis-server and PostgreSQL are
 *   there (else one line says why it is skipped).
 *
 * Every row reports the gateway process's CPU time (user + system, /proc/<pid>/stat) spent in the
 * measured phase divided by its requests. Figures are from one run: compare ratios within a run.
 *
 * Usage: npm run bench [-- --only relay|fleet|cluster --requests 2000 --stream-requests 400 --concurrency 16
 *   --chunks 50 --fleet 1,1000 --fleet-requests 4000 --fleet-warmup 1000 --fleet-concurrency 16
 *   --fleet-max-concurrent 32 --cluster-requests 2000 --cluster-stream-requests 1000 --cluster-rounds 50
 *   --cluster-warmup 200 --cluster-paths local,forwarded --max-seconds 240 --dist dist,/tmp/old/dist --repeat 1 --trace off|on|both --threads]
 *
 * --dist compares builds in one run: a comma-separated list of build directories (default `dist`);
 * the relay part runs once per build and repetition, interleaved (A B A B …, --repeat times), each
 * with that build's gateway and daemon, and ends with each build's median CPU per request and the
 * ratio to the first build. The fleet and cluster parts use the first build.
 *
 * --trace on runs the relay part's gateway with OpenTelemetry tracing at full sampling
 * (OTEL_EXPORTER_OTLP_ENDPOINT at a local sink that answers 200, bench/lib/otlp-sink.js); --trace both
 * runs every build with tracing off and on, interleaved, and compares them like builds.
 * --threads also prints (stderr) each measured phase's gateway CPU split into the main thread and
 * the other threads (V8's garbage-collector helpers, libuv's pool).
 */
'use strict';
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { CLK_TCK, cpuMs, threadCpuMs, fdLimits, children, spawnNode, stop, freePort, waitFor } = require('./lib/proc');
const { drive: driveLoad, fmt, fmtCpu } = require('./lib/load');
const { startOtlpSink } = require('./lib/otlp-sink');
const { fleetMessage } = require('./lib/fleet-ipc');
const { startBackend, chatBody, responsesBody } = require('./lib/backend');
const { clusterPart, clusterUnavailable } = require('./cluster');

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const ONLY = args.only;
if (ONLY !== undefined && !['relay', 'fleet', 'cluster'].includes(ONLY)) {
  console.error(`--only must be relay, fleet or cluster, got "${ONLY}"`);
  process.exit(2);
}
const REQUESTS = Number(args.requests ?? 2000);
const STREAM_REQUESTS = Number(args['stream-requests'] ?? 400);
const CONCURRENCY = Number(args.concurrency ?? 16);
const CHUNKS = Number(args.chunks ?? 50);
const FLEET_SIZES = String(args.fleet ?? '1,1000')
  .split(',')
  .map(Number);
if (!FLEET_SIZES.every((n) => Number.isInteger(n) && n > 0)) {
  console.error(`--fleet must be a comma-separated list of positive integers, got "${args.fleet}"`);
  process.exit(2);
}
const FLEET_REQUESTS = Number(args['fleet-requests'] ?? 4000);
const FLEET_WARMUP = Number(args['fleet-warmup'] ?? 1000);
const FLEET_CONCURRENCY = Number(args['fleet-concurrency'] ?? 16);
const FLEET_MAX_CONCURRENT = Number(args['fleet-max-concurrent'] ?? 32);
const MAX_SECONDS = Number(args['max-seconds'] ?? 240);
const DISTS = String(args.dist ?? 'dist')
  .split(',')
  .filter(Boolean);
const CLUSTER = {
  requests: Number(args['cluster-requests'] ?? 2000),
  streamRequests: Number(args['cluster-stream-requests'] ?? 1000),
  rounds: Number(args['cluster-rounds'] ?? 50),
  warmup: Number(args['cluster-warmup'] ?? 200),
  only: String(args['cluster-paths'] ?? 'local,forwarded').split(','),
};
if (!CLUSTER.only.every((p) => p === 'local' || p === 'forwarded')) {
  console.error(`--cluster-paths must be local, forwarded or both (comma-separated), got "${args['cluster-paths']}"`);
  process.exit(2);
}
const REPEAT = Number(args.repeat ?? 1);
if (!Number.isInteger(REPEAT) || REPEAT < 1) {
  console.error(`--repeat must be a positive integer, got "${args.repeat}"`);
  process.exit(2);
}
const TRACE = String(args.trace ?? 'off');
if (!['off', 'on', 'both'].includes(TRACE)) {
  console.error(`--trace must be off, on or both, got "${args.trace}"`);
  process.exit(2);
}
const VARIANTS = DISTS.flatMap((dist) =>
  (TRACE === 'both' ? [false, true] : [TRACE === 'on']).map((trace) => ({ dist, trace, name: trace ? `${dist} +trace` : dist })),
);
let sink; // the OTLP sink while any variant traces
const SECRET = 'bench-secret';
const THREADS = process.argv.includes('--threads');
const NODE_FLAGS = process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ').filter(Boolean) : [];

/** `total` requests over `concurrency` connections (default --concurrency) to `path` (default chat completions); see bench/lib/load.js. */
const drive = (baseUrl, total, payloads, { concurrency = CONCURRENCY, path } = {}) => driveLoad(baseUrl, total, payloads, { concurrency, path });

// ---------------------------------------------------------------- open-file limit

const FD_NEED = (ONLY === 'relay' || ONLY === 'cluster' ? 0 : Math.max(...FLEET_SIZES)) + FLEET_CONCURRENCY + 512;
const FD = fdLimits();
if (FD.soft < FD_NEED) {
  console.error(
    `open-file limit too low: need about ${FD_NEED} descriptors per process for a ${Math.max(...FLEET_SIZES)}-worker fleet, ` +
      `Node runs with ${FD.soft} (hard limit ${FD.hard}). Raise the hard limit (e.g. /etc/security/limits.conf, docker --ulimit nofile=4096:4096) ` +
      `or use a smaller --fleet.`,
  );
  process.exit(2);
}
const fdNote = `open files: Node runs with soft limit ${FD.soft} (hard ${FD.hard}; Node raises its soft limit to the hard one at startup), need about ${FD_NEED} per process`;

/** A fresh gateway with its own SQLite file; nothing in its config limits the number of workers. */
async function startGateway(dir, label, dist = DISTS[0], trace = false) {
  const port = await freePort();
  // Tracing off must mean off even when the caller's shell has OTEL_* set.
  const otel = trace
    ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: process.env.OTEL_TRACES_SAMPLER || 'always_on' }
    : { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' };
  const child = spawnNode(
    join(dist, 'main.js'),
    [],
    {
      LISTEN_ADDR: `127.0.0.1:${port}`,
      WORKER_SECRET: SECRET,
      DATABASE_URL: `sqlite:${join(dir, `${label}.db`)}`,
      LOG_LEVEL: 'error',
      MAX_QUEUE_LEN: '10000',
      ...otel,
    },
    { nodeFlags: NODE_FLAGS },
  );
  if (NODE_FLAGS.length) console.error(`bench: gateway for ${label} is pid ${child.pid}`);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/health/ready`)).ok, 30000, `the gateway (${label}) to become ready`);
  return { child, url, port };
}

/** Runs `phase` and adds the CPU ms per request each named process spent meanwhile. */
async function withCpu(label, pids, total, phase) {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]));
  const threadsBefore = THREADS ? threadCpuMs(pids.gateway) : undefined;
  const from = process.hrtime.bigint() / 1000n;
  const result = await phase();
  const to = process.hrtime.bigint() / 1000n;
  for (const [k, pid] of Object.entries(pids)) result[`${k}CpuMs`] = (cpuMs(pid) - before[k]) / total;
  if (threadsBefore) {
    const after = threadCpuMs(pids.gateway);
    console.error(
      `bench: ${label} gateway CPU ms/req: main thread ${fmtCpu((after.main - threadsBefore.main) / total)}, other threads ${fmtCpu((after.other - threadsBefore.other) / total)}, system ${fmtCpu((after.sys - threadsBefore.sys) / total)}`,
    );
  }
  // Same monotonic clock as V8 profile timestamps: bench/profile-top.js --from/--to cuts to this phase.
  if (NODE_FLAGS.length) console.error(`bench: ${label} measured phase: --from ${from} --to ${to} (gateway pid ${pids.gateway})`);
  return result;
}

// ---------------------------------------------------------------- relay: direct vs gateway + daemon

async function relayPart(dir, { dist, trace, name } = VARIANTS[0], tag = '') {
  const backend = await startBackend({ chunks: CHUNKS });
  const backendUrl = `http://127.0.0.1:${backend.address().port}`;
  let gw;
  let daemon;
  try {
    gw = await startGateway(dir, `relay${tag}`, dist, trace);
    daemon = spawnNode(
      join(dist, 'worker/main.js'),
      [
        '--proxy-url',
        gw.url,
        '--worker-secret',
        SECRET,
        '--backend-url',
        backendUrl,
        '--models',
        'bench',
        '--max-concurrency',
        String(CONCURRENCY * 2),
        '--log-level',
        'error',
      ],
      {},
      { nodeFlags: NODE_FLAGS },
    );
    await waitFor(async () => (await (await fetch(`${gw.url}/v1/models`)).json()).data.length > 0, 30000, 'the worker daemon to register');

    const plain = [chatBody('bench', false)];
    const streaming = [chatBody('bench', true)];
    const translated = [responsesBody('bench', true)];
    // Warm up every measured path (JIT, connection pools) before measuring: the streaming one too, or
    // its first requests' compilation and the deoptimisations they trigger land in the streaming figure.
    await drive(backendUrl, 200, plain);
    await drive(gw.url, 200, plain);
    await drive(gw.url, 200, streaming);
    await drive(gw.url, 50, translated, { path: '/v1/responses' });

    const rows = [];
    // `translated stream`: the streaming row's request as the Responses API (/v1/responses → chat
    // completions and its SSE back into Responses events); its direct column is the chat stream.
    for (const [label, total, payloads, path] of [
      ['non-streaming', REQUESTS, plain],
      ['streaming', STREAM_REQUESTS, streaming],
      ['translated stream', STREAM_REQUESTS, translated, '/v1/responses'],
    ]) {
      const direct = await drive(backendUrl, total, label === 'translated stream' ? streaming : payloads);
      const gateway = await withCpu(`relay${tag} ${label}`, { gateway: gw.child.pid }, total, () => drive(gw.url, total, payloads, { path }));
      rows.push({ label, direct, gateway });
    }
    console.log(
      `Relay${tag || trace ? ` [${name}]${tag}` : ''} — ${REQUESTS} non-streaming / ${STREAM_REQUESTS} streaming (${CHUNKS} chunks) requests, concurrency ${CONCURRENCY}, loopback`,
    );
    console.log(
      '| workload | direct req/s | gateway req/s | throughput ratio | direct p50 ms | gateway p50 ms | gateway p99 ms | gateway TTFB p50 ms | gateway CPU ms/req | failures |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const { label, direct, gateway } of rows) {
      console.log(
        `| ${label} | ${fmt(direct.rps)} | ${fmt(gateway.rps)} | ${(gateway.rps / direct.rps).toFixed(2)} | ${fmt(direct.p50)} | ${fmt(gateway.p50)} | ` +
          `${fmt(gateway.p99)} | ${fmt(gateway.ttfb50)} | ${fmtCpu(gateway.gatewayCpuMs)} | ${direct.failures + gateway.failures} |`,
      );
    }
    const [, passThrough, translatedRow] = rows;
    const signed = (text) => (text.startsWith('-') ? text : `+${text}`);
    const added = (key, format) => signed(format(translatedRow.gateway[key] - passThrough.gateway[key]));
    console.log(
      `translated stream vs streaming pass-through: gateway CPU ${(translatedRow.gateway.gatewayCpuMs / passThrough.gateway.gatewayCpuMs).toFixed(2)}x ` +
        `(${added('gatewayCpuMs', fmtCpu)} ms/req), added latency p50 ${added('p50', fmt)} ms, TTFB p50 ${added('ttfb50', fmt)} ms`,
    );
    console.log('');
    return rows;
  } finally {
    if (daemon) await stop(daemon);
    if (gw) await stop(gw.child);
    backend.close();
  }
}

/** The relay part once per variant (build, tracing) and repetition, interleaved, then medians and ratios to the first. */
async function relayCompare(dir) {
  const cpu = new Map(VARIANTS.map((v) => [v.name, { 'non-streaming': [], streaming: [], 'translated stream': [] }]));
  for (let r = 0; r < REPEAT; r++) {
    for (const [i, variant] of VARIANTS.entries()) {
      const rows = await relayPart(dir, variant, ` #${r + 1}.${i + 1}`);
      for (const { label, gateway } of rows) cpu.get(variant.name)[label].push(gateway.gatewayCpuMs);
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const first = VARIANTS[0].name;
  console.log(`Relay comparison — gateway CPU ms/req, ${REPEAT} interleaved run(s) per variant; median, all runs, ratio of medians to ${first}`);
  console.log('| build | workload | median | runs | ratio |');
  console.log('|---|---|---|---|---|');
  for (const label of ['non-streaming', 'streaming', 'translated stream']) {
    const base = median(cpu.get(first)[label]);
    for (const { name } of VARIANTS) {
      const xs = cpu.get(name)[label];
      console.log(`| ${name} | ${label} | ${fmtCpu(median(xs))} | ${xs.map(fmtCpu).join(' ')} | ${(median(xs) / base).toFixed(2)} |`);
    }
  }
  if (sink) console.log(`tracing: the OTLP sink received ${sink.stats.posts} batches, ${(sink.stats.bytes / 1e6).toFixed(1)} MB`);
  console.log('');
}

// ---------------------------------------------------------------- fleet: routing over N workers

async function fleetScenario(dir, n) {
  let gw;
  let fleet;
  try {
    gw = await startGateway(dir, `fleet-${n}`);
    fleet = spawnNode(
      'bench/fleet.js',
      ['--url', `ws://127.0.0.1:${gw.port}/v1/worker/connect`, '--secret', SECRET, '--count', String(n), '--max-concurrent', String(FLEET_MAX_CONCURRENT)],
      {},
      { ipc: true },
    );
    const registered = await fleetMessage(fleet, 'registered', 120000);
    await waitFor(async () => (await (await fetch(`${gw.url}/v1/models`)).json()).data.length >= n, 30000, `/v1/models to list ${n} models`);

    const payloads = Array.from({ length: n }, (_, i) => chatBody(`fleet-${i}`, false));
    await drive(gw.url, FLEET_WARMUP, payloads, { concurrency: FLEET_CONCURRENCY });
    fleet.send({ type: 'reset' });
    const result = await withCpu(`fleet N=${n}`, { gateway: gw.child.pid, fleet: fleet.pid }, FLEET_REQUESTS, () =>
      drive(gw.url, FLEET_REQUESTS, payloads, { concurrency: FLEET_CONCURRENCY }),
    );
    fleet.send({ type: 'stats' });
    const stats = await fleetMessage(fleet, 'stats', 10000);
    return { n, registeredMs: registered.ms, ...result, stats };
  } finally {
    if (fleet) {
      if (fleet.connected) fleet.send({ type: 'stop' });
      await stop(fleet, 5000);
    }
    if (gw) await stop(gw.child);
  }
}

async function fleetPart(dir) {
  const rows = [];
  for (const n of FLEET_SIZES) rows.push(await fleetScenario(dir, n));
  console.log(
    `Fleet — ${FLEET_REQUESTS} non-streaming requests (after ${FLEET_WARMUP} warm-up) round-robin over models fleet-0…fleet-<N-1>, ` +
      `one per fake worker (max_concurrent ${FLEET_MAX_CONCURRENT}), concurrency ${FLEET_CONCURRENCY}, loopback`,
  );
  console.log('| workers | req/s | gateway CPU ms/req | p50 ms | p99 ms | failures | fleet CPU ms/req | requests per worker min–max | registration s |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.n} | ${fmt(r.rps)} | ${fmtCpu(r.gatewayCpuMs)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${r.failures} | ${fmtCpu(r.fleetCpuMs)} | ` +
        `${r.stats.perWorkerMin}–${r.stats.perWorkerMax} | ${(r.registeredMs / 1000).toFixed(1)} |`,
    );
  }
  const base = rows[0];
  if (rows.length > 1) {
    console.log('');
    console.log(`| comparison | throughput ratio | gateway CPU/request ratio |`);
    console.log('|---|---|---|');
    for (const r of rows.slice(1)) {
      console.log(`| ${r.n} vs ${base.n} workers | ${(r.rps / base.rps).toFixed(2)} | ${(r.gatewayCpuMs / base.gatewayCpuMs).toFixed(2)} |`);
    }
  }
  const lost = rows.filter((r) => r.stats.closed > 0 || r.stats.unexpected > 0 || r.stats.requests !== FLEET_REQUESTS);
  for (const r of lost) {
    console.log(`note: N=${r.n}: fleet answered ${r.stats.requests} requests, saw ${r.stats.closed} closes and ${r.stats.unexpected} unexpected frames`);
  }
  console.log(`${fdNote}; CPU from /proc/<pid>/stat utime+stime at ${CLK_TCK} ticks/s`);
  console.log('');
}

// ---------------------------------------------------------------- main

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${MAX_SECONDS} s (--max-seconds); stopping`);
    for (const c of children) c.kill('SIGKILL');
    process.exit(3);
  }, MAX_SECONDS * 1000);
  watchdog.unref();
  try {
    if (ONLY === undefined || ONLY === 'relay') {
      if (VARIANTS.some((v) => v.trace)) sink = await startOtlpSink();
      if (VARIANTS.length === 1 && REPEAT === 1) await relayPart(dir);
      else await relayCompare(dir);
    }
    if (ONLY === undefined || ONLY === 'fleet') await fleetPart(dir);
    if (ONLY === undefined || ONLY === 'cluster') {
      const why = await clusterUnavailable();
      if (why === undefined) await clusterPart({ ...CLUSTER, dist: DISTS[0], chunks: CHUNKS, nodeFlags: NODE_FLAGS });
      else if (ONLY === 'cluster') {
        console.error(`the cluster part cannot run: ${why}`);
        process.exitCode = 2;
      } else console.log(`Cluster part skipped: ${why}.`);
    }
  } finally {
    for (const c of children) await stop(c, 5000);
    rmSync(dir, { recursive: true, force: true });
    sink?.close();
  }
}

main().catch((e) => {
  console.error(e);
  for (const c of children) c.kill('SIGKILL');
  process.exit(1);
});
