#!/usr/bin/env node
/* Gateway vs direct-backend benchmark, all on loopback, bounded in count and time.
 *
 * Starts a fake OpenAI-compatible backend (instant answers, so the gateway's own cost dominates),
 * the built gateway (dist/main.js) and the built worker daemon (dist/worker/main.js), then drives
 * the same load at the backend directly and through the gateway, and prints the ratios measured
 * in this one run. Usage: npm run bench [-- --requests 2000 --concurrency 16 --chunks 50]
 */
'use strict';
const http = require('node:http');
const { spawn } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { Agent, request } = require('undici');

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const REQUESTS = Number(args.requests ?? 2000);
const STREAM_REQUESTS = Number(args['stream-requests'] ?? 400);
const CONCURRENCY = Number(args.concurrency ?? 16);
const CHUNKS = Number(args.chunks ?? 50);
const SECRET = 'bench-secret';

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench', object: 'chat.completion', created: 1, model: 'bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello from the bench backend' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 },
});
const chunk = (i) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'bench', choices: [{ index: 0, delta: { content: `tok${i} ` }, finish_reason: null }] })}\n\n`;

function startBackend() {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ object: 'list', data: [{ id: 'bench', object: 'model' }] }));
    }
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (JSON.parse(body).stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (let i = 0; i < CHUNKS; i++) res.write(chunk(i));
        return res.end('data: [DONE]\n\n');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(COMPLETION);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function freePort() {
  return new Promise((resolve) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(check, ms = 30000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out waiting for the benchmark setup');
}

async function drive(baseUrl, total, stream) {
  const dispatcher = new Agent({ connections: CONCURRENCY, pipelining: 1 });
  const payload = JSON.stringify({ model: 'bench', stream, messages: [{ role: 'user', content: 'hi' }] });
  const latencies = [];
  const ttfbs = [];
  let next = 0;
  let failures = 0;
  const started = process.hrtime.bigint();
  async function lane() {
    while (next < total) {
      next++;
      const t0 = process.hrtime.bigint();
      const res = await request(`${baseUrl}/v1/chat/completions`, { method: 'POST', body: payload, headers: { 'content-type': 'application/json' }, dispatcher });
      let first = true;
      for await (const _ of res.body) {
        if (first) {
          ttfbs.push(Number(process.hrtime.bigint() - t0) / 1e6);
          first = false;
        }
      }
      if (res.statusCode !== 200) failures++;
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await dispatcher.close();
  const pct = (xs, p) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
  return { rps: total / seconds, p50: pct(latencies, 50), p99: pct(latencies, 99), ttfb50: pct(ttfbs, 50), failures };
}

function fmt(n) {
  return n >= 100 ? n.toFixed(0) : n.toFixed(2);
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  const backend = await startBackend();
  const backendUrl = `http://127.0.0.1:${backend.address().port}`;
  const port = await freePort();
  const gatewayUrl = `http://127.0.0.1:${port}`;
  const children = [];
  const run = (script, argv, env) => {
    const child = spawn(process.execPath, [...(process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : []), script, ...argv], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(child);
    return child;
  };
  try {
    run('dist/main.js', [], { LISTEN_ADDR: `127.0.0.1:${port}`, WORKER_SECRET: SECRET, DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`, LOG_LEVEL: 'error', MAX_QUEUE_LEN: '10000' });
    await waitFor(async () => (await fetch(`${gatewayUrl}/health/ready`)).ok);
    run('dist/worker/main.js', ['--proxy-url', gatewayUrl, '--worker-secret', SECRET, '--backend-url', backendUrl, '--models', 'bench', '--max-concurrency', String(CONCURRENCY * 2), '--log-level', 'error'], {});
    await waitFor(async () => ((await (await fetch(`${gatewayUrl}/v1/models`)).json()).data.length > 0));

    // Warm up both paths (JIT, connection pools) before measuring.
    await drive(backendUrl, 200, false);
    await drive(gatewayUrl, 200, false);

    const rows = [];
    for (const [label, total, stream] of [['non-streaming', REQUESTS, false], ['streaming', STREAM_REQUESTS, true]]) {
      const direct = await drive(backendUrl, total, stream);
      const gateway = await drive(gatewayUrl, total, stream);
      rows.push({ label, direct, gateway });
    }
    console.log(`Switchboard benchmark — ${REQUESTS} non-streaming / ${STREAM_REQUESTS} streaming (${CHUNKS} chunks) requests, concurrency ${CONCURRENCY}, loopback`);
    console.log('| workload | direct req/s | gateway req/s | throughput ratio | direct p50 ms | gateway p50 ms | gateway p99 ms | gateway TTFB p50 ms | failures |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const { label, direct, gateway } of rows) {
      console.log(`| ${label} | ${fmt(direct.rps)} | ${fmt(gateway.rps)} | ${(gateway.rps / direct.rps).toFixed(2)} | ${fmt(direct.p50)} | ${fmt(gateway.p50)} | ${fmt(gateway.p99)} | ${fmt(gateway.ttfb50)} | ${direct.failures + gateway.failures} |`);
    }
  } finally {
    for (const c of children) c.kill('SIGTERM');
    backend.close();
    await new Promise((r) => setTimeout(r, 500));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
