'use strict';
// Child processes and their CPU time for bench/run.js: spawn and stop Node children, free ports, wait for
// a condition, read a process's CPU time and the open-file limit from /proc.
const http = require('node:http');
const { spawn, execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU time of a whole process (all its threads) so far, in ms; tick resolution. */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after "(comm)": state is field 3, utime field 14, stime field 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

/** CPU ms of a process's main thread (its thread id is the pid), of all its other threads (V8's GC helpers, libuv's pool), and its system (kernel) part. */
function threadCpuMs(pid) {
  const { readdirSync } = require('node:fs');
  let main = 0;
  let other = 0;
  let sys = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
    sys += (Number(fields[12]) * 1000) / CLK_TCK;
    if (tid === String(pid)) main += ms;
    else other += ms;
  }
  return { main, other, sys };
}

/**
 * The 1000-worker fleet holds one socket per worker in the gateway and in the fleet process, plus
 * client connections and the database. Every child here is a Node process, and Node raises its own
 * soft RLIMIT_NOFILE to the hard limit at startup, so a soft `ulimit -n` of 1024 does not matter:
 * only the hard limit must leave room. Read from /proc/self/limits: this process is Node too, so
 * its (already raised) soft value is what the children will get.
 */
function fdLimits() {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const [soft, hard] = line.trim().split(/\s+/).slice(3, 5);
  const num = (s) => (s === 'unlimited' ? Infinity : Number(s));
  return { soft: num(soft), hard: num(hard) };
}

const children = new Set();

function spawnNode(script, argv, env, { nodeFlags = [], ipc = false } = {}) {
  const child = spawn(process.execPath, [...nodeFlags, script, ...argv], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit', ...(ipc ? ['ipc'] : [])],
  });
  child.exited = new Promise((resolve) => child.once('exit', resolve));
  children.add(child);
  child.exited.then(() => children.delete(child));
  return child;
}

async function stop(child, ms = 15000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  await child.exited;
  clearTimeout(timer);
}

function freePort() {
  return new Promise((resolve) => {
    const s = http.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(check, ms = 30000, what = 'the benchmark setup') {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

module.exports = { CLK_TCK, cpuMs, threadCpuMs, fdLimits, children, spawnNode, stop, freePort, waitFor };
