import OpenAI from 'openai';
import { workerConfig } from '../../../src/worker/config';
import { WorkerDaemon } from '../../../src/worker/daemon';
import { startGateway, TestGateway, TEST_SECRET } from '../../support/gateway';
import { FakeBackend, RecordedRequest } from '../../worker/support/fake-backend';

const NOT_HERE = { status: 404, json: { error: { message: 'File Not Found', type: 'not_found_error' } } };

export interface ResponsesEnv {
  gw: TestGateway;
  backend: FakeBackend;
  daemon: WorkerDaemon;
  openai: OpenAI;
  close(): Promise<void>;
}

/**
 * A real gateway, one real worker daemon and a fake backend on loopback ports. The daemon probes the
 * backend and advertises what it found: with `chatOnly`, the backend answers 404 on `/v1/responses`
 * and `/v1/messages`, so the worker advertises only `/v1/chat/completions` and the gateway must
 * translate; otherwise it advertises `/v1/responses` too and the gateway relays it as is.
 */
export async function startResponsesEnv(options: { chatOnly: boolean }): Promise<ResponsesEnv> {
  const backend = new FakeBackend();
  if (options.chatOnly) {
    backend.endpointProbe['/v1/responses'] = NOT_HERE;
    backend.endpointProbe['/v1/messages'] = NOT_HERE;
  }
  await backend.start();
  const gw = await startGateway({ HEARTBEAT_INTERVAL_SECS: '0.2', HEARTBEAT_TIMEOUT_SECS: '5' });
  const daemon = new WorkerDaemon(
    workerConfig({
      workerSecret: TEST_SECRET,
      proxyUrl: gw.url,
      backendUrl: backend.url,
      workerName: 'responses-worker',
      models: ['llama3'],
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
  await registered;
  return {
    gw,
    backend,
    daemon,
    openai: new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'client-key', maxRetries: 0 }),
    async close() {
      void daemon.stop();
      void daemon.stop();
      await daemon.waitForExit();
      await gw.close();
      await backend.close();
    },
  };
}

/** The JSON bodies of the requests the gateway relayed to the backend, in order. */
export function received(backend: FakeBackend): Array<{ path: string; body: Record<string, any> }> {
  return backend.relayed.map((r: RecordedRequest) => ({ path: r.path, body: JSON.parse(r.body) as Record<string, any> }));
}

/** A chat completion as a backend answers it. */
export function chatCompletion(message: Record<string, unknown>, finishReason: string): string {
  return JSON.stringify({
    id: 'chatcmpl-e2e',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'llama3',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finishReason }],
    usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 },
  });
}

/** A streamed chat completion's SSE bytes, one event per chat chunk delta. */
export function chatStream(deltas: Array<Record<string, unknown>>, finishReason: string): Buffer[] {
  const base = { id: 'chatcmpl-e2e', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'llama3' };
  const events: unknown[] = deltas.map((delta) => ({ ...base, choices: [{ index: 0, delta, finish_reason: null }] }));
  events.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: finishReason }] });
  const usage = { ...base, choices: [], usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 } };
  return [...events, usage].map((e) => Buffer.from(`data: ${JSON.stringify(e)}\n\n`)).concat(Buffer.from('data: [DONE]\n\n'));
}
