'use strict';
/* What two hops between processes cost on this machine by themselves, for the cluster part: a
 * forwarded request crosses two more sockets than a local one (caller → owner, owner → caller), and
 * at concurrency 1 each crossing wakes a process that was asleep. This measures a bare WebSocket round
 * trip (ws, loopback, TCP_NODELAY, a few hundred bytes each way) between this process and an echo
 * process, paced like the requests (the echo side sleeps between messages), so the cluster part can
 * print the floor under its "added latency". No gateway code runs here.
 */
const { spawn } = require('node:child_process');
const WebSocket = require('ws');

const ECHO = `
const { WebSocketServer } = require('ws');
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
wss.on('listening', () => process.stdout.write(String(wss.address().port) + '\\n'));
wss.on('connection', (ws) => ws.on('message', (d) => ws.send(d)));
`;

/** p50 of `count` round trips, one every `gapMs` (ms); resolves with milliseconds. */
async function hopFloor({ count = 400, gapMs = 1 } = {}) {
  const child = spawn(process.execPath, ['-e', ECHO], { stdio: ['ignore', 'pipe', 'inherit'], cwd: __dirname });
  try {
    const port = await new Promise((resolve, reject) => {
      child.stdout.once('data', (d) => resolve(Number(String(d).trim())));
      child.once('exit', (code) => reject(new Error(`echo process exited (${code})`)));
    });
    const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const payload = 'x'.repeat(400);
    const times = [];
    for (let i = 0; i < count + 50; i++) {
      const t0 = process.hrtime.bigint();
      await new Promise((resolve) => {
        ws.once('message', resolve);
        ws.send(payload);
      });
      if (i >= 50) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
    ws.terminate();
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)];
  } finally {
    child.kill();
  }
}

module.exports = { hopFloor };
