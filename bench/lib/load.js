'use strict';
// The load generator of bench/run.js (requests over a fixed number of connections) and its number formats.
const { Agent, request } = require('undici');

/**
 * `total` requests over `concurrency` connections to `path`; request k carries payloads[k % payloads.length].
 * A caller's `dispatcher` (an undici Agent) keeps its connections across calls; else one is made and closed.
 */
async function drive(baseUrl, total, payloads, { concurrency, path = '/v1/chat/completions', dispatcher: given }) {
  const dispatcher = given ?? new Agent({ connections: concurrency, pipelining: 1 });
  const latencies = [];
  const ttfbs = [];
  let next = 0;
  let failures = 0;
  const started = process.hrtime.bigint();
  async function lane() {
    while (next < total) {
      const payload = payloads[next++ % payloads.length];
      const t0 = process.hrtime.bigint();
      try {
        const res = await request(`${baseUrl}${path}`, {
          method: 'POST',
          body: payload,
          headers: { 'content-type': 'application/json' },
          dispatcher,
        });
        let first = true;
        for await (const _ of res.body) {
          if (first) {
            ttfbs.push(Number(process.hrtime.bigint() - t0) / 1e6);
            first = false;
          }
        }
        if (res.statusCode !== 200) failures++;
      } catch {
        failures++;
      }
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (!given) await dispatcher.close();
  // The raw (sorted) figures too, so a caller can pool several runs (bench/cluster.js).
  return { rps: total / seconds, p50: pct(latencies, 50), p99: pct(latencies, 99), ttfb50: pct(ttfbs, 50), failures, seconds, latencies, ttfbs };
}

/** The p-th percentile of `xs` (sorts it in place). */
const pct = (xs, p) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

function fmt(n) {
  return n >= 100 ? n.toFixed(0) : n.toFixed(2);
}
const fmtCpu = (n) => n.toFixed(3);

module.exports = { drive, pct, fmt, fmtCpu };
