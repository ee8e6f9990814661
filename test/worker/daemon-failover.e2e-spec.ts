import { FakeGateway } from './support/fake-gateway';
import { SECRET, useWorkerHarness } from './support/harness';

/** The daemon itself (not only its link) with `--proxy-url a,b`: the second gateway takes it when the first is gone. */
describe('worker daemon with several gateways (--proxy-url a,b)', () => {
  const { env, startWorker } = useWorkerHarness();

  it('registers at the second gateway when the first refuses, and moves back when the one it is on goes away', async () => {
    const second = new FakeGateway({ secret: SECRET });
    await second.start();
    try {
      const firstUrl = env.gateway.url;
      await env.gateway.stop(); // the first refuses connections
      startWorker({ proxyUrls: [firstUrl, second.url] });
      expect((await (await second.connection(1)).next('register')).models).toEqual(['llama3']);
      // The first is back and the second goes away: the worker moves on to the next URL.
      env.gateway = new FakeGateway({ secret: SECRET });
      await env.gateway.start(Number(new URL(firstUrl).port));
      await second.stop();
      expect((await (await env.gateway.connection(1)).next('register')).models).toEqual(['llama3']);
    } finally {
      await second.stop();
    }
  });
});
