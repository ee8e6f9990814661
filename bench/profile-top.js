#!/usr/bin/env node
/* Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time by function and by module.
 *
 * Usage: node bench/profile-top.js <file.cpuprofile> [--top 25] [--from <µs> --to <µs>] [--callers <text>] [--samples]
 * --from/--to restrict the summary to samples within a window of the monotonic clock in µs, the
 * clock of both the profile's timestamps and process.hrtime; bench/run.js prints each measured
 * phase's window when BENCH_NODE_FLAGS is set, so a profile can be cut to the measured requests.
 * --callers also lists, for functions whose name contains <text>, their self time by the four
 * frames above them (who calls the hot function).
 * --samples weighs every sample alike (shares of samples, not of time): on a busy machine a sample
 * taken just before the process is descheduled otherwise carries the whole pause with it, and one
 * unlucky function can show 10 % of "busy" time from a handful of samples.
 */
'use strict';
const { readFileSync } = require('node:fs');

const [file, ...rest] = process.argv.slice(2);
const args = Object.fromEntries(rest.reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
if (!file) {
  console.error('usage: node bench/profile-top.js <file.cpuprofile> [--top 25] [--from <µs> --to <µs>]');
  process.exit(2);
}
const TOP = Number(args.top ?? 25);
const FROM = args.from !== undefined ? Number(args.from) : -Infinity;
const TO = args.to !== undefined ? Number(args.to) : Infinity;
const CALLERS = args.callers;
const SAMPLES = process.argv.includes('--samples');

const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);

function moduleOf(url) {
  if (!url) return '(native/V8)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + 'node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (url.startsWith('node:')) return 'node core';
  const dist = url.indexOf('/dist/');
  if (dist >= 0)
    return `switchboard ${url
      .slice(dist + 1)
      .split('/')
      .slice(0, 2)
      .join('/')}`;
  return url;
}

function shortUrl(url) {
  if (!url) return '';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return url.slice(dist + 1);
  return url.replace(/^file:\/\//, '');
}

const byFunction = new Map();
const byModule = new Map();
const byCallers = new Map();
const special = new Map(); // (idle), (program), (garbage collector)
let total = 0;
let t = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i];
  if (t < FROM || t > TO) continue;
  // A sample stands for the time until the next one.
  const dt = SAMPLES ? 1000 : i + 1 < profile.timeDeltas.length ? profile.timeDeltas[i + 1] : 0;
  const { callFrame } = nodes.get(profile.samples[i]);
  const name = callFrame.functionName || '(anonymous)';
  total += dt;
  if (name.startsWith('(') && !callFrame.url) {
    special.set(name, (special.get(name) ?? 0) + dt);
    continue;
  }
  const key = `${name} ${shortUrl(callFrame.url)}:${callFrame.lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + dt);
  const mod = moduleOf(callFrame.url);
  byModule.set(mod, (byModule.get(mod) ?? 0) + dt);
  if (CALLERS && name.includes(CALLERS)) {
    const stack = [];
    for (let id = parentOf.get(profile.samples[i]); id !== undefined && stack.length < 4; id = parentOf.get(id)) {
      const f = nodes.get(id).callFrame;
      stack.push(`${f.functionName || '(anonymous)'} ${shortUrl(f.url)}:${f.lineNumber + 1}`);
    }
    const k = `${key} ← ${stack.join(' ← ')}`;
    byCallers.set(k, (byCallers.get(k) ?? 0) + dt);
  }
}

const idle = special.get('(idle)') ?? 0;
const busy = total - idle;
const ms = (us) => (us / 1000).toFixed(1);
const pct = (us) => ((100 * us) / busy).toFixed(1);
console.log(`${file}`);
if (SAMPLES) console.log('--samples: every "ms" figure below is a count of samples');
console.log(`window ${ms(total)} ms, idle ${ms(idle)} ms (${((100 * idle) / total).toFixed(1)} %), busy ${ms(busy)} ms; shares below are of busy time`);
for (const [name, us] of special) if (name !== '(idle)') console.log(`  ${name}: ${ms(us)} ms (${pct(us)} %)`);
console.log('');
console.log('| self ms | % busy | function |');
console.log('|---|---|---|');
for (const [key, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`| ${ms(us)} | ${pct(us)} | ${key} |`);
console.log('');
console.log('| self ms | % busy | module |');
console.log('|---|---|---|');
for (const [key, us] of [...byModule].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`| ${ms(us)} | ${pct(us)} | ${key} |`);
if (CALLERS) {
  console.log('');
  console.log(`| self ms | % busy | "${CALLERS}" ← callers |`);
  console.log('|---|---|---|');
  for (const [key, us] of [...byCallers].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`| ${ms(us)} | ${pct(us)} | ${key} |`);
}
