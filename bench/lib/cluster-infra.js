'use strict';
// What the cluster part of the benchmark (bench/cluster.js) runs on besides the gateways: its own
// redis-server, a fresh PostgreSQL schema, and the Redis command counts of `INFO commandstats`.
// The same approach as the cluster tests (test/rate-limit/support.ts); their schemas are made here
// too (test/cluster/support/postgres.ts requires this file; its types: cluster-infra.d.ts).
const { spawn, spawnSync } = require('node:child_process');
const net = require('node:net');
const { Client } = require('pg');

/** The PostgreSQL the cluster part uses: BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the test database on loopback. */
const POSTGRES_URL = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** Why the cluster part cannot run here (redis-server missing, PostgreSQL unreachable), or undefined when it can. */
async function clusterUnavailable() {
  const redis = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  if (redis.error || redis.status !== 0) return 'no redis-server on PATH';
  const client = new Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (e) {
    return `PostgreSQL at ${withoutPassword(POSTGRES_URL)} not reachable (${e.message}); set BENCH_DATABASE_URL`;
  } finally {
    await client.end().catch(() => undefined);
  }
  return undefined;
}

function withoutPassword(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

async function withClient(url, fn) {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * A fresh schema `schema` (default `bench_cluster_<pid>`, dropped first if a run left it) of the
 * PostgreSQL at `baseUrl` (default POSTGRES_URL): `url` selects it (the gateway reads `?schema=`),
 * `drop()` removes it.
 */
async function freshSchema(schema = `bench_cluster_${process.pid}`, baseUrl = POSTGRES_URL) {
  const dropSql = `DROP SCHEMA IF EXISTS "${schema}" CASCADE`;
  await withClient(baseUrl, async (c) => {
    await c.query(dropSql);
    await c.query(`CREATE SCHEMA "${schema}"`);
  });
  return {
    schema,
    url: `${baseUrl}${baseUrl.includes('?') ? '&' : '?'}schema=${schema}`,
    drop: () => withClient(baseUrl, (c) => c.query(dropSql)).then(() => undefined),
  };
}

/** A redis-server of its own on `port`: loopback only, no persistence. Resolves once it accepts connections. */
function startRedis(port) {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.exited = new Promise((resolve) => child.once('exit', resolve));
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`redis-server on ${port} did not start:\n${output}`)), 10000);
    const onData = (data) => {
      output += data.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        child.stdout.removeListener('data', onData);
        child.stderr.removeListener('data', onData);
        child.stdout.resume();
        child.stderr.resume();
        resolve({ child, url: `redis://127.0.0.1:${port}`, port, stop: () => stopRedis(child) });
      }
    };
    function fail(err) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(err);
    }
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`redis-server on ${port} exited (${code}):\n${output}`)));
  });
}

async function stopRedis(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await child.exited;
}

/** One command over a fresh connection in the Redis protocol (RESP); resolves with the bulk reply's text. */
function redisCommand(port, ...words) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    socket.setTimeout(5000, () => socket.destroy(new Error(`redis ${words.join(' ')}: no answer within 5 s`)));
    socket.on('connect', () => socket.write(`*${words.length}\r\n${words.map((w) => `$${Buffer.byteLength(w)}\r\n${w}\r\n`).join('')}`));
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      // A bulk reply: `$<bytes>\r\n<data>\r\n` (the header is ASCII, so its index is a byte index).
      if (data[0] === 0x2d) return done(new Error(`redis ${words.join(' ')}: ${data.toString().trim()}`));
      const header = data.indexOf('\r\n');
      if (header < 0) return;
      const length = Number(data.subarray(1, header).toString());
      if (data.length >= header + 2 + length) done(undefined, data.subarray(header + 2, header + 2 + length).toString());
    });
    socket.on('error', (e) => done(e));
    function done(err, value) {
      socket.destroy();
      if (err) reject(err);
      else resolve(value);
    }
  });
}

/** Calls per command so far, from `INFO commandstats`: { get: 12, evalsha: 3, … }. */
async function commandStats(port) {
  const text = await redisCommand(port, 'INFO', 'commandstats');
  const calls = {};
  for (const line of text.split('\r\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m) calls[m[1]] = Number(m[2]);
  }
  return calls;
}

/**
 * The commands between two `commandStats` readings, without the readings' own INFO calls (the
 * second reading counts the first): { total, byCommand: [[name, calls], …] most first }.
 */
function commandDelta(before, after) {
  const byCommand = [];
  for (const [name, calls] of Object.entries(after)) {
    const n = calls - (before[name] ?? 0);
    if (name !== 'info' && n > 0) byCommand.push([name, n]);
  }
  byCommand.sort((a, b) => b[1] - a[1]);
  return { total: byCommand.reduce((sum, [, n]) => sum + n, 0), byCommand };
}

module.exports = { POSTGRES_URL, clusterUnavailable, freshSchema, startRedis, commandStats, commandDelta };
