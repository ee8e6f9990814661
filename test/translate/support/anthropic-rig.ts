import Anthropic from '@anthropic-ai/sdk';
import { workerConfig } from '../../../src/worker/config';
import { WorkerDaemon } from '../../../src/worker/daemon';
import { CLOSE_MS, withDeadline, WAIT_MS } from '../../support/deadline';
import { startGateway, TestGateway, TEST_SECRET } from '../../support/gateway';
import { FakeBackend, ProbeRoute, RecordedRequest } from '../../worker/support/fake-backend';

/** The model the client asks for (what Claude Code would send) and the one the backend serves. */
export const CLIENT_MODEL = 'local-coder';

const NOT_FOUND = { status: 404, json: { error: { message: 'File Not Found', type: 'not_found_error' } } };

export interface AnthropicRig {
  gw: TestGateway;
  backend: FakeBackend;
  client: Anthropic;
  /** The chat body the backend received for the n-th relayed request (1-based), parsed. */
  received(n: number): Promise<{ request: RecordedRequest; body: Record<string, any> }>;
  close(): Promise<void>;
}

/**
 * A real gateway with ONE real worker daemon whose backend serves only `/v1/chat/completions`
 * (and `/tokenize`, answered by `tokenize`, when given): the daemon's probes find `/v1/messages` absent, so
 * the worker advertises chat completions only and the gateway must translate.
 */
export async function startAnthropicRig(options: { tokenize?: ProbeRoute } = {}): Promise<AnthropicRig> {
  const backend = new FakeBackend();
  backend.models = [CLIENT_MODEL];
  for (const path of ['/v1/messages', '/v1/responses', '/v1/completions', '/v1/embeddings']) backend.endpointProbe[path] = NOT_FOUND;
  // The fake answers routes as probes (its `relayed` leaves them out): the test reads `requests`.
  if (options.tokenize) backend.routes.set('POST /tokenize', options.tokenize);
  else backend.endpointProbe['/tokenize'] = NOT_FOUND;
  await backend.start();
  const gw = await startGateway({ HEARTBEAT_INTERVAL_SECS: '0.2', HEARTBEAT_TIMEOUT_SECS: '5' });
  const daemon = new WorkerDaemon(
    workerConfig({
      workerSecret: TEST_SECRET,
      proxyUrl: gw.url,
      backendUrl: backend.url,
      workerName: 'chat-only',
      models: [CLIENT_MODEL],
      discoverModels: false,
      heartbeatIntervalMs: 200,
      reconnectMinMs: 50,
      reconnectMaxMs: 200,
      drainTimeoutMs: 2_000,
      probe: true,
    }),
  );
  const registered = new Promise<void>((resolve) => daemon.once('registered', () => resolve()));
  daemon.start();
  await withDeadline(registered, WAIT_MS, 'the chat-only worker did not register');
  const client = new Anthropic({ baseURL: gw.url, apiKey: 'client-key', maxRetries: 0 });
  return {
    gw,
    backend,
    client,
    async received(n) {
      const request = await withDeadline(backend.waitForRelayed(n), WAIT_MS, `the backend did not receive request ${n}`);
      return { request, body: JSON.parse(request.body) as Record<string, any> };
    },
    async close() {
      void daemon.stop();
      void daemon.stop();
      await withDeadline(daemon.waitForExit(), CLOSE_MS, 'the worker daemon did not exit');
      await gw.close();
      await backend.close();
    },
  };
}
