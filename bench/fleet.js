#!/usr/bin/env node
/* A fleet of fake workers for the benchmark: one process, N WebSocket connections to the gateway.
 *
 * Worker i registers exactly one model, `fleet-<i>`, answers every `request` at once with a fixed
 * `response_complete` and every `ping` with `pong`. It does no other work, so what the benchmark
 * measures is the gateway's cost of routing over N connected workers. Run as its own process (by
 * bench/run.js) so its CPU is neither the gateway's nor the load generator's.
 *
 * Talks to the parent over the IPC channel:
 *   → {type:'registered', count, ms}       once all N workers got register_ack
 *   → {type:'failed', error}               a worker could not connect or register
 *   ← {type:'stats'}  → {type:'stats', requests, pongs, perWorkerMin, perWorkerMax, closed, unexpected}
 *   ← {type:'reset'}  zeroes the request counters (after warm-up)
 *   ← {type:'stop'}   closes every socket and exits
 * Usage (normally started by run.js): node bench/fleet.js --url ws://127.0.0.1:8080/v1/worker/connect
 *   --secret s --count 1000 [--max-concurrent 32] [--connect-parallel 64]
 */
'use strict';
const WebSocket = require('ws');

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const URL_ = args.url;
const SECRET = args.secret;
const COUNT = Number(args.count ?? 1);
const MAX_CONCURRENT = Number(args['max-concurrent'] ?? 32);
const CONNECT_PARALLEL = Number(args['connect-parallel'] ?? 64);
const PROTOCOL_VERSION = '2026-04-bridge-v1';

// The answer is the same for every request: build it once, splice in the request id per answer.
const COMPLETION_BODY = JSON.stringify(
  JSON.stringify({
    id: 'chatcmpl-fleet',
    object: 'chat.completion',
    created: 1,
    model: 'fleet',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hello from the fake fleet' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 },
  }),
);
const COMPLETE_TAIL =
  `","status_code":200,"headers":{"content-type":"application/json"},"body":${COMPLETION_BODY},` +
  `"token_counts":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11}}`;
const PONG = JSON.stringify({ type: 'pong', current_load: 0 });

const sockets = [];
const perWorker = new Array(COUNT).fill(0);
let requests = 0;
let pongs = 0;
let closed = 0;
let unexpected = 0;
let stopping = false;

function send(msg) {
  if (process.connected) process.send(msg);
}

function connect(i) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(URL_, { headers: { 'x-worker-secret': SECRET }, perMessageDeflate: false, handshakeTimeout: 60000 });
    sockets[i] = ws;
    let registered = false;
    ws.on('open', () => {
      ws.send(
        JSON.stringify({
          type: 'register',
          worker_name: `fleet-w${i}`,
          models: [`fleet-${i}`],
          max_concurrent: MAX_CONCURRENT,
          protocol_version: PROTOCOL_VERSION,
          current_load: 0,
        }),
      );
    });
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      switch (msg.type) {
        case 'request':
          requests++;
          perWorker[i]++;
          ws.send(`{"type":"response_complete","request_id":"${msg.request_id}${COMPLETE_TAIL}`);
          return;
        case 'ping':
          pongs++;
          ws.send(PONG);
          return;
        case 'register_ack':
          registered = true;
          resolve();
          return;
        case 'cancel':
          return; // answered at once: nothing ever runs long enough to cancel
        default:
          unexpected++;
      }
    });
    ws.on('error', (err) => {
      if (!registered) reject(new Error(`worker ${i}: ${err.message}`));
    });
    ws.on('close', (code, reason) => {
      closed++;
      if (!registered) reject(new Error(`worker ${i} closed before register_ack: ${code} ${reason}`));
      else if (!stopping) process.stderr.write(`fleet: worker ${i} closed by the gateway: ${code} ${reason}\n`);
    });
  });
}

async function main() {
  const started = Date.now();
  let next = 0;
  // A bounded number of handshakes in flight: each one costs the gateway an scrypt verification.
  async function lane() {
    while (next < COUNT) await connect(next++);
  }
  await Promise.all(Array.from({ length: Math.min(CONNECT_PARALLEL, COUNT) }, lane));
  send({ type: 'registered', count: COUNT, ms: Date.now() - started });
}

process.on('message', (msg) => {
  if (msg.type === 'stats') {
    let min = Infinity;
    let max = 0;
    for (const n of perWorker) {
      if (n < min) min = n;
      if (n > max) max = n;
    }
    send({ type: 'stats', requests, pongs, perWorkerMin: min, perWorkerMax: max, closed, unexpected });
  } else if (msg.type === 'reset') {
    requests = 0;
    perWorker.fill(0);
  } else if (msg.type === 'stop') {
    stopping = true;
    for (const ws of sockets) ws?.terminate();
    setTimeout(() => process.exit(0), 50);
  }
});
process.on('disconnect', () => process.exit(0));

main().catch((e) => {
  send({ type: 'failed', error: e.message });
  setTimeout(() => process.exit(1), 50);
});
