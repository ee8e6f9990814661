'use strict';
// bench/tracing.js --mode pair: a gateway with tracing off and one with tracing on, side by side
// under the same load at the same time (see bench/tracing.js).
const http = require('node:http');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { cpuMs, spawnNode, stop, freePort, waitFor } = require('./proc');
const { drive, fmtCpu } = require('./load');
const { startOtlpSink } = require('./otlp-sink');

const SECRET = 'bench-secret';

/** An OpenAI-compatible backend that answers at once (the gateways' own cost dominates). */
function startBackend(chunks) {
  const completion = JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    model: 'bench',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hello from the bench backend' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 },
  });
  const chunk = (i) =>
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'bench', choices: [{ index: 0, delta: { content: `tok${i} ` } }] })}\n\n`;
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') return res.writeHead(200).end(JSON.stringify({ object: 'list', data: [{ id: 'bench' }] }));
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return res.writeHead(404).end('{"error":"not found"}');
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      let stream = false;
      try {
        stream = JSON.parse(body).stream === true;
      } catch {
        return res.writeHead(400).end('{"error":"bad json"}');
      }
      if (!stream) return res.writeHead(200, { 'content-type': 'application/json' }).end(completion);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < chunks; i++) res.write(chunk(i));
      res.end('data: [DONE]\n\n');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function startPair(dist, dir, backendUrl, sinkUrl, concurrency) {
  const pair = [];
  for (const trace of [false, true]) {
    const port = await freePort();
    const otel = trace
      ? { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, OTEL_TRACES_SAMPLER: process.env.OTEL_TRACES_SAMPLER || 'always_on' }
      : { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' };
    const env = { LISTEN_ADDR: `127.0.0.1:${port}`, WORKER_SECRET: SECRET, DATABASE_URL: `sqlite:${join(dir, `${trace}.db`)}`, LOG_LEVEL: 'error', ...otel };
    const gw = { trace, url: `http://127.0.0.1:${port}`, child: spawnNode(join(dist, 'main.js'), [], env) };
    pair.push(gw);
    await waitFor(async () => (await fetch(`${gw.url}/health/ready`)).ok, 30000, `the gateway (tracing ${trace ? 'on' : 'off'}) to become ready`);
    const argv = [
      '--proxy-url',
      gw.url,
      '--worker-secret',
      SECRET,
      '--backend-url',
      backendUrl,
      '--models',
      'bench',
      '--max-concurrency',
      String(concurrency * 2),
      '--log-level',
      'error',
    ];
    gw.daemon = spawnNode(join(dist, 'worker/main.js'), argv, {});
    await waitFor(async () => (await (await fetch(`${gw.url}/v1/models`)).json()).data.length > 0, 30000, 'the worker daemon to register');
  }
  return pair;
}

async function pairMode(args, dist) {
  const rounds = Number(args.rounds ?? 5);
  const requests = Number(args.requests ?? 3000);
  const streamRequests = Number(args['stream-requests'] ?? 600);
  const concurrency = Number(args.concurrency ?? 8);
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-tracing-'));
  const backend = await startBackend(Number(args.chunks ?? 50));
  const sink = await startOtlpSink();
  let pair = [];
  try {
    pair = await startPair(dist, dir, `http://127.0.0.1:${backend.address().port}`, sink.url, concurrency);
    const body = (stream) => [JSON.stringify({ model: 'bench', stream, messages: [{ role: 'user', content: 'hi' }] })];
    // Both gateways' JIT settles over thousands of requests: measured before, tracing's share is mostly warm-up.
    const warmup = Number(args.warmup ?? 2000);
    if (warmup > 0) await Promise.all(pair.map((gw) => drive(gw.url, warmup, body(false), { concurrency })));
    const results = { 'non-streaming': [], streaming: [] };
    for (let r = 0; r < rounds; r++) {
      for (const [label, total, payloads] of [
        ['non-streaming', requests, body(false)],
        ['streaming', streamRequests, body(true)],
      ]) {
        const before = pair.map((gw) => cpuMs(gw.child.pid));
        const runs = await Promise.all(pair.map((gw) => drive(gw.url, total, payloads, { concurrency })));
        const [off, on] = pair.map((gw, i) => (cpuMs(gw.child.pid) - before[i]) / total);
        const failures = runs.reduce((n, x) => n + x.failures, 0);
        results[label].push({ off, on, failures });
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `Tracing on vs off, side by side — ${rounds} round(s) of ${requests} non-streaming and ${streamRequests} streaming requests to each gateway at once, concurrency ${concurrency} each, build ${dist}`,
    );
    console.log('| workload | off CPU ms/req | on CPU ms/req | on/off per round | median on/off | failures |');
    console.log('|---|---|---|---|---|---|');
    for (const [label, xs] of Object.entries(results)) {
      const ratios = xs.map((x) => x.on / x.off);
      console.log(
        `| ${label} | ${xs.map((x) => fmtCpu(x.off)).join(' ')} | ${xs.map((x) => fmtCpu(x.on)).join(' ')} | ${ratios.map((x) => x.toFixed(2)).join(' ')} | ` +
          `${median(ratios).toFixed(2)} | ${xs.reduce((n, x) => n + x.failures, 0)} |`,
      );
    }
    console.log(`the OTLP sink received ${sink.stats.posts} batches, ${(sink.stats.bytes / 1e6).toFixed(1)} MB`);
  } finally {
    for (const gw of pair) {
      if (gw.daemon) await stop(gw.daemon);
      await stop(gw.child);
    }
    backend.close();
    sink.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = { pairMode };
