#!/usr/bin/env node
/* Cache-affinity benchmark (issue 19): does routing keep a conversation on the worker that holds
 * its prompt in cache, without piling work on one worker?
 *
 * One process: the BUILT gateway (dist/, `npm run bench:affinity` builds it) on a loopback port with
 * a temporary SQLite file, a fleet of scripted WebSocket workers and the load generator. Each
 * worker models a backend prefix cache: an LRU of the prompts it served (--cache prompts); a
 * request's first byte comes after --base-ms plus --per-char-ms for every character of its prompt
 * beyond the longest prefix it shares with a cached prompt. The workload, the same for every
 * configuration (fixed seed):
 *   - --sessions multi-turn conversations running at once (starting within --ramp-ms, --think-ms
 *     between turns), --turns turns each, every one with its own long system prompt (half send
 *     `x-session-affinity`, half rely on the prompt-prefix key);
 *   - a batch of --batch requests sharing one long system prompt, each with its own question,
 *     at most --batch-concurrency in flight.
 * It runs three times, each on a fresh gateway and fresh (cold) workers: round_robin, smart with
 * affinity off, smart with affinity on (the default), and reports mean and p99 time to first byte
 * (client side: request sent → response head) and the busiest worker's share of the requests
 * against the mean share. Targets (issue 19): affinity's mean TTFB ≤ 0.5 × smart without affinity,
 * busiest worker ≤ 1.5 × the mean share.
 *
 * Usage: npm run bench:affinity [-- --workers 8 --slots 8 --cache 8 --sessions 32 --turns 10 --batch 48 --batch-concurrency 12
 *   --base-ms 20 --per-char-ms 0.1 --ramp-ms 1000 --think-ms 50 --system-chars 4000 --turn-chars 300]
 */
'use strict';
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir, cpus, loadavg } = require('node:os');
const { join } = require('node:path');
const WebSocket = require('ws');

const DIST = join(__dirname, '..', 'dist');
let createApp;
let loadConfig;
try {
  createApp = require(join(DIST, 'bootstrap.js')).createApp;
  loadConfig = require(join(DIST, 'config')).loadConfig;
} catch (err) {
  console.error(`bench/affinity.js needs the built project (run "npm run build" or "npm run bench:affinity"): ${err.message}`);
  process.exit(2);
}

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const int = (name, fallback) => Number(args[name] ?? fallback);
const WORKERS = int('workers', 8);
const SLOTS = int('slots', 8);
const CACHE = int('cache', 8);
const BASE_MS = int('base-ms', 20);
const PER_CHAR_MS = Number(args['per-char-ms'] ?? 0.1);
const SESSIONS = int('sessions', 32);
const TURNS = int('turns', 10);
const BATCH = int('batch', 48);
const BATCH_CONCURRENCY = int('batch-concurrency', 12);
const SYSTEM_CHARS = int('system-chars', 4000);
const TURN_CHARS = int('turn-chars', 300);
/** Sessions start spread over this many ms, and wait this long between turns (a user reading, an agent's tool call). */
const RAMP_MS = int('ramp-ms', 1000);
const THINK_MS = int('think-ms', 50);
const SECRET = 'bench-affinity-secret';
const MODEL = 'bench-model';

/** Deterministic PRNG (mulberry32) and text from it: every configuration sees the same prompts. */
function prng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const WORDS = 'the of model cache token prefix worker route gateway session prompt answer request fleet batch system user assistant slot queue'.split(' ');
function text(rnd, chars) {
  let s = '';
  while (s.length < chars) s += WORDS[Math.floor(rnd() * WORDS.length)] + (rnd() < 0.1 ? '. ' : ' ');
  return s.slice(0, chars);
}

// ---------------------------------------------------------------- scripted workers with a prefix cache

/** The prompt as the backend sees it: the messages in order. */
function promptOf(body) {
  return body.messages.map((m) => `${m.role}: ${m.content}\n`).join('');
}

function commonPrefix(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

class CachingWorker {
  constructor(name, url) {
    this.name = name;
    this.url = url;
    this.lru = []; // most recently used first
    this.served = 0;
    this.promptChars = 0;
    this.cachedChars = 0;
    this.timers = new Set();
  }

  connect() {
    return new Promise((resolve, reject) => {
      const ws = (this.ws = new WebSocket(this.url, { headers: { 'x-worker-secret': SECRET }, perMessageDeflate: false }));
      ws.on('open', () =>
        ws.send(
          JSON.stringify({
            type: 'register',
            worker_name: this.name,
            models: [MODEL],
            max_concurrent: SLOTS,
            protocol_version: '2026-04-bridge-v1',
            current_load: 0,
          }),
        ),
      );
      ws.on('message', (data) => {
        const msg = JSON.parse(data.toString());
        if (msg.type === 'register_ack') resolve();
        else if (msg.type === 'ping') ws.send(JSON.stringify({ type: 'pong', current_load: this.timers.size }));
        else if (msg.type === 'request') this.serve(msg);
      });
      ws.on('error', reject);
    });
  }

  /** First byte after the base delay plus the cost of the prompt characters not in cache. */
  serve(msg) {
    this.served++;
    const prompt = promptOf(JSON.parse(msg.body));
    let cached = 0;
    for (const p of this.lru) cached = Math.max(cached, commonPrefix(p, prompt));
    // The new prompt goes in front; cached prompts it extends are part of it now and leave.
    this.lru = [prompt, ...this.lru.filter((p) => !prompt.startsWith(p))];
    if (this.lru.length > CACHE) this.lru.length = CACHE;
    this.promptChars += prompt.length;
    this.cachedChars += cached;
    const delay = BASE_MS + (prompt.length - cached) * PER_CHAR_MS;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const body = JSON.stringify({
        id: 'c',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      });
      this.ws.send(
        JSON.stringify({ type: 'response_complete', request_id: msg.request_id, status_code: 200, headers: { 'content-type': 'application/json' }, body }),
      );
    }, delay);
    this.timers.add(timer);
  }

  close() {
    for (const t of this.timers) clearTimeout(t);
    this.ws.terminate();
  }
}

// ---------------------------------------------------------------- the workload

function workload() {
  const rnd = prng(19);
  const sessions = Array.from({ length: SESSIONS }, (_, s) => ({
    startMs: Math.floor(rnd() * RAMP_MS),
    header: s % 2 === 0 ? { 'x-session-affinity': `session-${s}` } : {},
    system: text(rnd, SYSTEM_CHARS),
    turns: Array.from({ length: TURNS }, () => ({ user: text(rnd, TURN_CHARS), assistant: text(rnd, TURN_CHARS) })),
  }));
  const shared = text(rnd, SYSTEM_CHARS * 1.5);
  const batch = Array.from({ length: BATCH }, () => text(rnd, TURN_CHARS));
  return { sessions, shared, batch };
}

async function timedPost(url, body, headers) {
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const ttfb = performance.now() - t0;
  await res.text();
  if (res.status !== 200) throw new Error(`request answered ${res.status}`);
  return ttfb;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function runSession(url, s, out) {
  await sleep(s.startMs);
  const messages = [{ role: 'system', content: s.system }];
  for (const t of s.turns) {
    if (messages.length > 1) await sleep(THINK_MS);
    messages.push({ role: 'user', content: t.user });
    out.push(await timedPost(url, { model: MODEL, messages }, s.header));
    messages.push({ role: 'assistant', content: t.assistant });
  }
}

async function runBatch(url, w, out) {
  let next = 0;
  const lane = async () => {
    while (next < w.batch.length) {
      const q = w.batch[next++];
      out.push(
        await timedPost(
          url,
          {
            model: MODEL,
            messages: [
              { role: 'system', content: w.shared },
              { role: 'user', content: q },
            ],
          },
          {},
        ),
      );
    }
  };
  await Promise.all(Array.from({ length: BATCH_CONCURRENCY }, lane));
}

// ---------------------------------------------------------------- one configuration

async function runConfiguration(label, env, w) {
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-affinity-'));
  const config = loadConfig({
    LISTEN_ADDR: '127.0.0.1:0',
    WORKER_SECRET: SECRET,
    ADMIN_TOKEN: 'bench-admin',
    DATABASE_URL: `sqlite:${join(dir, 'switchboard.db')}`,
    LOG_LEVEL: 'silent',
    SHUTDOWN_DRAIN_TIMEOUT_SECS: '1',
    ...env,
  });
  const app = await createApp(config);
  const port = app.getHttpServer().address().port;
  const url = `http://127.0.0.1:${port}`;
  const fleet = Array.from({ length: WORKERS }, (_, i) => new CachingWorker(`gpu-${i}`, `ws://127.0.0.1:${port}/v1/worker/connect`));
  try {
    await Promise.all(fleet.map((f) => f.connect()));
    const ttfb = [];
    const started = performance.now();
    await Promise.all([...w.sessions.map((s) => runSession(url, s, ttfb)), runBatch(url, w, ttfb)]);
    const wallMs = performance.now() - started;
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const outcome = (r) => Number((metrics.match(new RegExp(`^switchboard_affinity_total\\{result="${r}"\\} (\\S+)`, 'm')) ?? [])[1] ?? 0);
    ttfb.sort((a, b) => a - b);
    const total = fleet.reduce((n, f) => n + f.served, 0);
    const busiest = Math.max(...fleet.map((f) => f.served));
    return {
      label,
      requests: ttfb.length,
      mean: ttfb.reduce((a, b) => a + b, 0) / ttfb.length,
      p99: ttfb[Math.min(ttfb.length - 1, Math.ceil(0.99 * ttfb.length) - 1)],
      busiestShare: busiest / total,
      busiestVsMean: busiest / (total / WORKERS),
      wallMs,
      hitRatio: fleet.reduce((n, f) => n + f.cachedChars, 0) / fleet.reduce((n, f) => n + f.promptChars, 0),
      affinity: `${outcome('preferred')} / ${outcome('spilled')} / ${outcome('none')}`,
    };
  } finally {
    fleet.forEach((f) => f.close());
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const w = workload();
  const load0 = loadavg()[0];
  const rows = [];
  for (const [label, env] of [
    ['round_robin', { ROUTING_STRATEGY: 'round_robin' }],
    ['smart, affinity off', { ROUTING_STRATEGY: 'smart', ROUTING_AFFINITY_ENABLED: 'false' }],
    ['smart + affinity', { ROUTING_STRATEGY: 'smart' }],
  ]) {
    rows.push(await runConfiguration(label, env, w));
    process.stderr.write(`bench:affinity ${label} done\n`);
  }
  const smart = rows[1];
  const aff = rows[2];
  const f = (v) => v.toFixed(1);
  const lines = [
    `Cache affinity — ${WORKERS} scripted workers × ${SLOTS} slots, each with an LRU of ${CACHE} prompts; first byte after ${BASE_MS} ms + ${PER_CHAR_MS} ms per uncached prompt character`,
    `Workload: ${SESSIONS} concurrent sessions (starting within ${RAMP_MS} ms) × ${TURNS} turns ${THINK_MS} ms apart (own ${SYSTEM_CHARS}-character system prompt each; half send x-session-affinity, half use the prefix key) + a batch of ${BATCH} requests sharing one ${SYSTEM_CHARS * 1.5}-character system prompt (${BATCH_CONCURRENCY} in flight)`,
    `Node ${process.version}, ${cpus().length} CPUs, 1-min load average ${load0.toFixed(2)} at the start, ${loadavg()[0].toFixed(2)} at the end`,
    '| routing | requests | mean TTFB ms | p99 TTFB ms | busiest worker share | busiest ÷ mean share | prompt characters cached | affinity preferred / spilled / none | wall s |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.label} | ${r.requests} | ${f(r.mean)} | ${f(r.p99)} | ${(r.busiestShare * 100).toFixed(1)} % | ${r.busiestVsMean.toFixed(2)} | ${(r.hitRatio * 100).toFixed(1)} % | ${r.affinity} | ${(r.wallMs / 1000).toFixed(1)} |`,
    ),
    `Targets: affinity mean TTFB ≤ 0.5 × smart without affinity: ${f(aff.mean)} ≤ ${f(smart.mean * 0.5)} ms → ${aff.mean <= smart.mean * 0.5 ? 'met' : 'NOT met'}; ` +
      `busiest worker ≤ 1.5 × the mean share: ${aff.busiestVsMean.toFixed(2)} → ${aff.busiestVsMean <= 1.5 ? 'met' : 'NOT met'}`,
    '(affinity outcomes: switchboard_affinity_total of the run; "none" = no key or affinity off)',
  ];
  console.log(lines.join('\n'));
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
