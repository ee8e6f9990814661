import { Admin, CreatedProvider, ProviderSettings } from './admin';
import { exchange, HttpExchange, postJson, RequestOptions } from './http';
import { ConnectOptions, RegisterOptions, ScriptedWorker } from './worker';
import { withTimeout } from './util';

/**
 * Per-test resources (workers, HTTP exchanges, admin-created providers), released after each
 * test so one test's leftovers cannot route, queue or hold capacity for the next.
 */
export class Scope {
  readonly admin: Admin;
  private workers: ScriptedWorker[] = [];
  private exchanges: HttpExchange[] = [];
  private providerNames: string[] = [];

  constructor(private readonly opts: { baseUrl?: string; adminToken?: string; wsUrl?: string } = {}) {
    this.admin = new Admin(opts.baseUrl, opts.adminToken);
  }

  async connect(opts: ConnectOptions = {}, label = 'worker'): Promise<ScriptedWorker> {
    const w = await ScriptedWorker.connect({ wsUrl: this.opts.wsUrl, ...opts }, label);
    this.workers.push(w);
    return w;
  }

  async worker(reg: RegisterOptions, opts: ConnectOptions = {}, label = 'worker'): Promise<ScriptedWorker> {
    const w = await this.connect(opts, label);
    await w.register(reg);
    return w;
  }

  post(path: string, body: string, headers: Record<string, string> = {}): HttpExchange {
    const x = postJson(path, body, headers, this.opts.baseUrl);
    this.exchanges.push(x);
    return x;
  }

  request(path: string, opts: RequestOptions = {}): HttpExchange {
    const x = exchange(path, { baseUrl: this.opts.baseUrl, ...opts });
    this.exchanges.push(x);
    return x;
  }

  async provider(settings: ProviderSettings = {}, label = 'p'): Promise<CreatedProvider> {
    const p = await this.admin.createProvider(settings, label);
    this.providerNames.push(p.name);
    return p;
  }

  async cleanup(): Promise<void> {
    for (const x of this.exchanges) x.abort();
    for (const w of this.workers) w.terminate();
    await withTimeout(Promise.all(this.workers.map((w) => w.closed)), 15_000, 'the terminated workers to close');
    // A drained worker's name stays cordoned until undrain; later tests may reuse the name.
    await this.admin.undrainAll();
    for (const name of this.providerNames) {
      await this.admin.deleteProvider(name).catch(() => undefined);
    }
    this.workers = [];
    this.exchanges = [];
    this.providerNames = [];
  }
}

/** A Scope whose resources are released after every test of the enclosing describe. */
export function useScope(
  opts: { baseUrl?: string; adminToken?: string; wsUrl?: string } | (() => { baseUrl?: string; adminToken?: string; wsUrl?: string }) = {},
): Scope {
  const holder: { scope?: Scope } = {};
  const proxy = new Proxy({} as Scope, {
    get(_t, prop) {
      if (!holder.scope) holder.scope = new Scope(typeof opts === 'function' ? opts() : opts);
      const v = (holder.scope as any)[prop];
      return typeof v === 'function' ? v.bind(holder.scope) : v;
    },
  });
  afterEach(async () => {
    if (holder.scope) await holder.scope.cleanup();
    holder.scope = undefined;
  });
  return proxy;
}
