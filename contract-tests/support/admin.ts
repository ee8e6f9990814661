import { httpCall, HttpResult } from './http';
import { target } from './target';
import { uid, waitUntil } from './util';

export interface ProviderSettings {
  enabled?: boolean;
  max_queue_len?: number;
  queue_timeout_secs?: number;
  request_timeout_secs?: number;
  max_models?: number;
  /** Models the provider declares: requests for them queue (instead of 404) while no worker serves them. */
  models?: string[];
}

export interface CreatedProvider {
  name: string;
  secret: string;
}

/** The operator API (Bearer ADMIN_TOKEN). */
export class Admin {
  constructor(
    private readonly baseUrl = target().url,
    private readonly token = target().adminToken,
  ) {}

  async call(method: string, path: string, body?: unknown): Promise<HttpResult> {
    return httpCall(path, {
      method,
      baseUrl: this.baseUrl,
      headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  private async ok(method: string, path: string, body?: unknown): Promise<any> {
    const res = await this.call(method, path, body);
    if (res.status < 200 || res.status >= 300) {
      throw new Error(`admin ${method} ${path} answered ${res.status}: ${res.text}`);
    }
    return res.text ? res.json() : undefined;
  }

  async createProvider(settings: ProviderSettings = {}, label = 'p'): Promise<CreatedProvider> {
    const name = `ct-${label}-${uid()}`;
    const secret = `secret-${uid()}-${uid()}`;
    await this.ok('POST', '/admin/providers', { name, secret, ...settings });
    return { name, secret };
  }

  patchProvider(name: string, patch: Record<string, unknown>): Promise<any> {
    return this.ok('PATCH', `/admin/providers/${encodeURIComponent(name)}`, patch);
  }

  deleteProvider(name: string): Promise<HttpResult> {
    return this.call('DELETE', `/admin/providers/${encodeURIComponent(name)}`);
  }

  async providers(): Promise<any[]> {
    return (await this.ok('GET', '/admin/providers')).data;
  }

  async provider(name: string): Promise<any | undefined> {
    return (await this.providers()).find((p) => p.name === name);
  }

  async workers(): Promise<any[]> {
    return (await this.ok('GET', '/admin/workers')).data;
  }

  async worker(id: string): Promise<any | undefined> {
    return (await this.workers()).find((w) => w.id === id);
  }

  /** Ids drained through this client: a drain cordons the worker name until undrain (see `undrainAll`). */
  readonly drained: string[] = [];

  drain(workerId: string, body: { timeout_secs?: number; reason?: string }): Promise<HttpResult> {
    this.drained.push(workerId);
    return this.call('POST', `/admin/workers/${encodeURIComponent(workerId)}/drain`, body);
  }

  undrain(workerId: string): Promise<HttpResult> {
    return this.call('POST', `/admin/workers/${encodeURIComponent(workerId)}/undrain`);
  }

  /** Lifts the cordons of every worker this client drained, so their names may register again. */
  async undrainAll(): Promise<void> {
    for (const id of this.drained.splice(0)) await this.undrain(id).catch(() => undefined);
  }

  refreshModels(workerId: string): Promise<HttpResult> {
    return this.call('POST', `/admin/workers/${encodeURIComponent(workerId)}/refresh-models`, {});
  }

  /** Waits until the provider's queue holds exactly `depth` requests. */
  async waitQueueDepth(name: string, depth: number): Promise<void> {
    await waitUntil(async () => (await this.provider(name))?.queue_depth === depth, `queue depth of ${name} to be ${depth}`);
  }
}
