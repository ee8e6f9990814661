#!/usr/bin/env node
/* What tracing at full sampling costs the gateway, measured so that a shared, noisy machine does
 * not drown it. Two modes:
 *
 * pair (default) — two gateways from the same build side by side, one with tracing off and one
 *   exporting every request over OTLP/HTTP to a local sink (bench/lib/otlp-sink.js), each with its
 *   own worker daemon, driven with the same load at the same time: both see the same machine, so
 *   the ratio of their CPU per request (user + system, every thread, /proc) holds even when the
 *   machine's load moves the absolute figures by ±30 % between runs. `--rounds` rounds, each the
 *   non-streaming and the streaming load; the median ratio is the figure.
 * observer — tracing's own CPU per request without the gateway: the built trace observer and
 *   Tracing drive many synthetic requests' traces (admission, placement, first byte, tokens, end)
 *   and export them; per build in --dist, fresh process per run, interleaved.
 *
 * Usage: node bench/tracing.js [--mode pair|observer] [--dist dist] [--rounds 5 --requests 3000
 *   --stream-requests 600 --concurrency 8 --chunks 50 --warmup 2000] [observer: --requests 200000 --repeat 3 --dist dist,dist-old]
 */
'use strict';
const { spawn, execFileSync } = require('node:child_process');
const { resolve } = require('node:path');
const { children } = require('./lib/proc');
const { pairMode } = require('./lib/tracing-pair');

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const MODE = args.mode ?? 'pair';
const REQUESTS = Number(args.requests ?? (MODE === 'pair' ? 3000 : 200000));
const REPEAT = Number(args.repeat ?? 3);
const DISTS = String(args.dist ?? 'dist')
  .split(',')
  .filter(Boolean);

/** One measurement, in this process (`--child <dist>`): CPU µs per traced request. */
async function child(dist) {
  const http = require('node:http');
  const sinkPort = Number(args.sink);
  const { RelayRequest } = require(resolve(dist, 'dispatch/relay-request.js'));
  const { Tracing } = require(resolve(dist, 'telemetry/tracing.service.js'));
  const { TraceObserver } = require(resolve(dist, 'dispatch/observers/trace.observer.js'));
  const tracing = new Tracing({ instanceId: 'bench', telemetry: { tracesEndpoint: `http://127.0.0.1:${sinkPort}/v1/traces`, captureContent: false } });
  const observer = new TraceObserver(tracing, { now: () => Date.now() });
  const worker = { id: 'w-0123456789', name: 'gpu-7', provider: 'local', maxConcurrent: 32 };
  const provider = { name: 'local' };
  const body = JSON.stringify({ model: 'bench', stream: false, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
  let n = 0;
  const one = () => {
    const req = new RelayRequest({
      id: `req-${n++}`,
      model: 'bench',
      endpointPath: '/v1/chat/completions',
      isStreaming: false,
      body,
      headers: { 'x-correlation-id': 'c' },
      correlationId: '3f0e8a4c-1b2d-4e5f-9a8b-7c6d5e4f3a2b',
      tenant: 'default',
      priority: 1,
      sink: {},
      route: { model: 'bench', requirements: {} },
    });
    const now = Date.now();
    Object.assign(req, { receivedAt: now, provider, targetModel: 'bench', worker });
    observer.submitted(req, now);
    observer.placed(req, worker, now);
    req.firstByteAt = now + 1;
    observer.firstByte?.(req, worker, now + 1); // older builds followed these with hooks
    req.tokenCounts = { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 };
    observer.tokens?.(req, req.tokenCounts);
    observer.finished(req, 200, now + 2, undefined);
  };
  // A few hundred requests per event-loop turn: batches are exported between them, as in the gateway.
  const run = (total) =>
    new Promise((done) => {
      let left = total;
      const step = () => {
        for (let k = 0; k < 200 && left > 0; k++, left--) one();
        if (left > 0) setImmediate(step);
        else done();
      };
      step();
    });
  await run(20000); // JIT warm-up
  const before = process.cpuUsage();
  await run(REQUESTS);
  await tracing.onApplicationShutdown();
  const used = process.cpuUsage(before);
  http.globalAgent.destroy();
  process.stdout.write(String((used.user + used.system) / REQUESTS));
}

async function observerMode() {
  const sink = spawn(
    process.execPath,
    ['-e', "require('http').createServer((q,s)=>{q.resume();q.on('end',()=>s.end('{}'))}).listen(0,'127.0.0.1',function(){console.log(this.address().port)})"],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    const port = await new Promise((ok) => sink.stdout.once('data', (d) => ok(String(d).trim())));
    const us = new Map(DISTS.map((d) => [d, []]));
    for (let r = 0; r < REPEAT; r++) {
      for (const dist of DISTS) {
        const out = execFileSync(process.execPath, [__filename, '--child', dist, '--sink', port, '--requests', String(REQUESTS)], {
          env: { ...process.env, LOG_LEVEL: 'error' },
        });
        us.get(dist).push(Number(out.toString().trim().split('\n').pop()));
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `Tracing's own CPU per request — ${REQUESTS} traced requests per run, full sampling, OTLP/HTTP JSON to a local sink; ${REPEAT} interleaved run(s) per build`,
    );
    console.log('| build | median µs/request | runs |');
    console.log('|---|---|---|');
    for (const [dist, xs] of us) console.log(`| ${dist} | ${median(xs).toFixed(1)} | ${xs.map((x) => x.toFixed(1)).join(' ')} |`);
  } finally {
    sink.kill();
  }
}

const fail = (e) => {
  console.error(e);
  for (const c of children) c.kill('SIGKILL');
  process.exit(1);
};
if (args.child) child(args.child).catch(fail);
else if (MODE === 'observer') observerMode().catch(fail);
else if (MODE === 'pair') pairMode(args, DISTS[0]).catch(fail);
else fail(new Error(`--mode must be pair or observer, got "${MODE}"`));
