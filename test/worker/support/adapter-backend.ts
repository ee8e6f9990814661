import { CacheFlushMessage, ModelLoadMessage, ModelUnloadMessage } from '../../../src/protocol';
import { BackendClient } from '../../../src/worker/requests/backend-client';
import { LifecycleHttp } from '../../../src/worker/models/lifecycle/backend-http';
import { OperationContext } from '../../../src/worker/models/lifecycle/types';
import { FakeBackend } from './fake-backend';

// Shared setup of the lifecycle adapter tests (lifecycle-adapters*.e2e-spec.ts): a fake backend on
// loopback, a client of it, and the context an adapter's operation runs with.

export interface AdapterBackend {
  b: FakeBackend;
  client: BackendClient;
  ctx: OperationContext;
  /** The progress fractions the operation reported, in order. */
  progress: number[];
}

export async function startAdapterBackend(): Promise<AdapterBackend> {
  const b = new FakeBackend();
  await b.start();
  const client = new BackendClient(b.url);
  const progress: number[] = [];
  const ctx: OperationContext = {
    signal: new AbortController().signal,
    http: new LifecycleHttp(client, 5_000),
    progress: (fraction) => progress.push(fraction),
    pause: () => new Promise((r) => setTimeout(r, 2)),
  };
  return { b, client, ctx, progress };
}

export async function stopAdapterBackend({ b, client }: AdapterBackend): Promise<void> {
  client.close();
  await b.close();
}

export const load = (model: string, extra: Partial<ModelLoadMessage> = {}): ModelLoadMessage => ({
  type: 'model_load',
  task_id: 't',
  model_id: model,
  ...extra,
});
export const unload = (model: string): ModelUnloadMessage => ({ type: 'model_unload', task_id: 't', model_id: model });
export const flush = (scope: CacheFlushMessage['scope'], extra: Partial<CacheFlushMessage> = {}): CacheFlushMessage => ({
  type: 'cache_flush',
  task_id: 't',
  scope,
  ...extra,
});

/** The backend calls so far, as `METHOD /path?query`. */
export const requestLines = (b: FakeBackend): string[] => b.requests.map((r) => `${r.method} ${r.path}${r.query ? `?${r.query}` : ''}`);
