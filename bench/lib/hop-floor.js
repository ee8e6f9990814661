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

/** p50 of `count` round trips, one every `gapMs` (ms); resolves with milliseconds, rejects if the echo process or the socket fails. */
async function hopFloor({ count = 400, gapMs = 1 } = {}) {
  const child = spawn(process.execPath, ['-e', ECHO], { stdio: ['ignore', 'pipe', 'inherit'], cwd: __dirname });
  let ws;
  try {
    const failed = new Promise((_, reject) => {
      child.once('exit', (code) => reject(new Error(`echo process exited (${code})`)));
      child.once('error', reject);
    });
    failed.catch(() => undefined);
    const port = await Promise.race([failed, new Promise((resolve) => child.stdout.once('data', (d) => resolve(Number(String(d).trim()))))]);
    ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
    const broken = new Promise((_, reject) => ws.on('error', reject).once('close', () => reject(new Error('echo socket closed'))));
    broken.catch(() => undefined);
    await Promise.race([failed, broken, new Promise((resolve) => ws.once('open', resolve))]);
    const payload = 'x'.repeat(400);
    const times = [];
    for (let i = 0; i < count + 50; i++) {
      const t0 = process.hrtime.bigint();
      await Promise.race([
        failed,
        broken,
        new Promise((resolve) => {
          ws.once('message', resolve);
          ws.send(payload);
        }),
      ]);
      if (i >= 50) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)];
  } finally {
    ws?.terminate();
    child.kill();
  }
}

module.exports = { hopFloor };
