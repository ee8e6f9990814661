/**
 * Issue 16 "also fix": a client that leaves while its async admission check runs (the Redis
 * limiter, here frozen so the check takes its command timeout) is recorded as 499, like every
 * other client-gone request, and its request never reaches a worker.
 */
import { connect } from 'node:net';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, sleep } from '../support/http';
import { metricValue } from '../support/routing';
import { RateLimiter } from '../../src/rate-limit';
import { TestRedisServer } from '../rate-limit/support';

describe('a client gone during an async admission check (Redis limiter)', () => {
  let redis: TestRedisServer;
  let gw: TestGateway;
  beforeAll(async () => {
    redis = await TestRedisServer.start();
    gw = await startGateway({ REDIS_URL: redis.url, DEFAULT_RATE_LIMIT: '1000req/min' });
    const limiter = gw.app.get(RateLimiter);
    await eventually(async () => ((await fetch(`${gw.url}/health`).then((r) => r.json())) as { redis?: { status: string } }).redis?.status === 'ok', 10_000);
    expect(limiter.synchronous).toBe(false);
  });
  afterAll(async () => {
    redis?.resume();
    await gw?.close();
    await redis?.stop();
  });

  it('is recorded as 499 in the request metrics, and its request never reaches a worker', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['adm-499'] });
    const labels = { model: '(unrouted)', status: '499' };
    const before = await metricValue(gw, 'switchboard_requests_total', labels);
    redis.pause(); // the limiter's command now waits for its timeout
    try {
      const body = JSON.stringify(chat('adm-499'));
      const client = connect(Number(new URL(gw.url).port), '127.0.0.1');
      client.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
      await sleep(150);
      client.destroy(); // gone before the limiter answered
      await sleep(1_000); // the limiter answers (locally, after its timeout) with the client long gone
    } finally {
      redis.resume();
    }
    await eventually(async () => (await metricValue(gw, 'switchboard_requests_total', labels)) === before + 1, 10_000);
    expect(worker.count('request')).toBe(0);
    worker.close();
  });
});
