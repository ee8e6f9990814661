import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post } from '../support/http';

describe('CORS', () => {
  it('is off by default: no CORS headers, preflight not answered as CORS', async () => {
    const gw = await startGateway();
    try {
      const res = await fetch(`${gw.url}/v1/models`, { headers: { origin: 'https://dash.example.com' } });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      const pre = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'OPTIONS',
        headers: { origin: 'https://dash.example.com', 'access-control-request-method': 'POST' },
      });
      expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await gw.close();
    }
  });

  describe('with CORS_ORIGINS', () => {
    let gw: TestGateway;
    beforeAll(async () => {
      gw = await startGateway({ CORS_ORIGINS: 'https://dash.example.com' });
    });
    afterAll(() => gw.close());

    it('answers a preflight for a listed origin, allowing the SDK headers', async () => {
      const pre = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://dash.example.com',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,x-correlation-id',
        },
      });
      expect(pre.status).toBeLessThan(300);
      expect(pre.headers.get('access-control-allow-origin')).toBe('https://dash.example.com');
      expect(pre.headers.get('access-control-allow-headers')).toContain('x-correlation-id');
      expect(pre.headers.get('access-control-allow-methods')).toContain('POST');
    });

    it('relayed responses carry the CORS headers and expose X-Correlation-Id', async () => {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['cors-model'] });
      const pending = post(gw.url, '/v1/chat/completions', chat('cors-model'), { origin: 'https://dash.example.com' });
      const req = await worker.next('request');
      worker.complete(req.request_id, { ok: true });
      const res = await pending;
      expect(res.headers.get('access-control-allow-origin')).toBe('https://dash.example.com');
      expect(res.headers.get('access-control-expose-headers')).toContain('x-correlation-id');
      worker.close();
    });

    it('does not allow other origins', async () => {
      const res = await fetch(`${gw.url}/v1/models`, { headers: { origin: 'https://evil.example.com' } });
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    });
  });
});
