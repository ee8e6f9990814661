import * as http from 'node:http';
import * as https from 'node:https';
import { forwardableHeaders } from '../../protocol';
import { ProxySettings, describeProxy, proxyAuthorization, proxyFor } from '../network/proxy-env';
import { TlsTrust } from '../network/tls-trust';
import { TunnelAgent } from '../network/tunnel-agent';

/** Raised when the backend could not be reached or gave no response head. */
export class BackendUnavailableError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'BackendUnavailableError';
  }
}

export interface BackendResponse {
  status: number;
  /** Lowercased, hop-by-hop headers removed; undefined when nothing is left. */
  headers: Record<string, string> | undefined;
  /** The body as it arrives: iterate it; destroying it (or aborting the signal) closes the socket. */
  body: http.IncomingMessage;
}

/**
 * Request headers we never pass to the backend: the gateway's own secret, compression we would
 * have to undo, and `expect` (a gateway-chosen 100-continue handshake the daemon does not run).
 * `host` and the other hop-by-hop headers are dropped by forwardableHeaders.
 */
const NOT_FORWARDED = new Set(['x-worker-secret', 'accept-encoding', 'expect']);

export interface BackendClientOptions {
  apiKey?: string;
  userAgent?: string;
  proxy?: ProxySettings;
  tls?: TlsTrust;
}

/** A small answer read whole (probes, model list). */
export interface BackendAnswer {
  status: number;
  text: string;
}

/**
 * How requests reach the backend: directly, through a CONNECT tunnel (https backend behind a
 * proxy) or in forward-proxy form (http backend behind a proxy: absolute URL sent to the proxy,
 * as curl does for http://).
 */
interface Route {
  transport: typeof http | typeof https;
  agent: http.Agent;
  /** Set in forward-proxy form. */
  forwardVia?: URL;
  description: string;
}

function routeFor(base: URL, options: BackendClientOptions): Route {
  const secure = base.protocol === 'https:';
  const tlsOptions = { ca: options.tls?.ca, rejectUnauthorized: options.tls?.rejectUnauthorized ?? true };
  const proxy = options.proxy ? proxyFor(base, options.proxy) : undefined;
  if (proxy && secure) {
    return {
      transport: https,
      agent: new TunnelAgent({ proxy, secure: true, tls: tlsOptions, keepAlive: true }),
      description: `through proxy ${describeProxy(proxy)} (CONNECT tunnel)`,
    };
  }
  if (proxy) {
    const toProxy = proxy.protocol === 'https:' ? https : http;
    return {
      transport: toProxy,
      agent: proxy.protocol === 'https:' ? new https.Agent({ keepAlive: true, ...tlsOptions }) : new http.Agent({ keepAlive: true }),
      forwardVia: proxy,
      description: `through proxy ${describeProxy(proxy)}`,
    };
  }
  return {
    transport: secure ? https : http,
    agent: secure ? new https.Agent({ keepAlive: true, ...tlsOptions }) : new http.Agent({ keepAlive: true }),
    description: 'directly',
  };
}

/**
 * Talks to the local OpenAI-compatible server with plain node:http: no default timeouts (a 70B
 * model may think for minutes before the first byte) and an abort that really closes the socket.
 */
export class BackendClient {
  private readonly base: URL;
  private readonly route: Route;

  constructor(
    baseUrl: string,
    private readonly options: BackendClientOptions = {},
  ) {
    this.base = new URL(baseUrl);
    this.route = routeFor(this.base, options);
  }

  /** "directly" or "through proxy http://host:port", for the start-up log. */
  get routeDescription(): string {
    return this.route.description;
  }

  /** The exact URL an endpoint path resolves to (base path kept, e.g. behind a reverse proxy). */
  urlFor(endpointPath: string): URL {
    const url = new URL(this.base.href);
    url.pathname = this.base.pathname.replace(/\/+$/, '') + endpointPath.split('?')[0];
    const q = endpointPath.indexOf('?');
    if (q !== -1) url.search = endpointPath.slice(q);
    return url;
  }

  /** Headers sent to the backend for one relayed request. */
  outgoingHeaders(clientHeaders: Record<string, string> | undefined, body: string): Record<string, string> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(forwardableHeaders(clientHeaders ?? {}) ?? {})) {
      if (!NOT_FORWARDED.has(name)) headers[name] = value;
    }
    if (this.options.apiKey) {
      headers.authorization = `Bearer ${this.options.apiKey}`;
      if (headers['x-api-key'] !== undefined) headers['x-api-key'] = this.options.apiKey;
    }
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(body));
    if (this.options.userAgent) headers['user-agent'] ??= this.options.userAgent;
    return headers;
  }

  /** POSTs a relayed request. Resolves once the response head is in; the body streams afterwards. */
  post(endpointPath: string, body: string, clientHeaders: Record<string, string> | undefined, signal: AbortSignal): Promise<BackendResponse> {
    return this.send('POST', this.urlFor(endpointPath), this.outgoingHeaders(clientHeaders, body), body, signal);
  }

  /**
   * A request of the worker's own (model list, probes), answered whole. The body is capped so a
   * misbehaving backend cannot make the daemon buffer without limit. Throws on network failure.
   */
  async call(method: 'GET' | 'POST', path: string, signal: AbortSignal, body?: string, maxBytes = 4 << 20): Promise<BackendAnswer> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (this.options.userAgent) headers['user-agent'] = this.options.userAgent;
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const res = await this.send(method, this.urlFor(path), headers, body, signal);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of res.body) {
      size += (c as Buffer).length;
      if (size > maxBytes) {
        res.body.destroy();
        throw new Error(`${method} ${path} answered more than ${maxBytes} bytes`);
      }
      chunks.push(c as Buffer);
    }
    return { status: res.status, text: Buffer.concat(chunks).toString('utf8') };
  }

  /** GET /v1/models → the `data[].id` list. Throws on any failure. */
  async listModels(signal: AbortSignal): Promise<string[]> {
    const res = await this.call('GET', '/v1/models', signal);
    const text = res.text;
    if (res.status < 200 || res.status > 299) {
      throw new Error(`GET /v1/models answered ${res.status}: ${text.slice(0, 200)}`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new Error('GET /v1/models did not answer JSON');
    }
    const data = (doc as { data?: unknown })?.data;
    if (!Array.isArray(data)) throw new Error('GET /v1/models answer has no "data" list');
    const ids: string[] = [];
    for (const entry of data) {
      const id = (entry as { id?: unknown })?.id;
      if (typeof id === 'string' && id.trim() && !ids.includes(id.trim())) ids.push(id.trim());
    }
    return ids;
  }

  close(): void {
    this.route.agent.destroy();
  }

  private send(method: string, url: URL, headers: Record<string, string>, body: string | undefined, signal: AbortSignal): Promise<BackendResponse> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(abortError());
        return;
      }
      const onResponse = (res: http.IncomingMessage) => {
        resolve({ status: res.statusCode ?? 502, headers: forwardableHeaders(res.headers), body: res });
      };
      const via = this.route.forwardVia;
      const req = via
        ? this.route.transport.request(
            {
              host: via.hostname.replace(/^\[|\]$/g, ''),
              port: Number(via.port || (via.protocol === 'https:' ? 443 : 80)),
              path: url.href,
              method,
              headers: { ...headers, host: url.host, ...proxyAuthorization(via) },
              agent: this.route.agent,
              signal,
            },
            onResponse,
          )
        : this.route.transport.request(url, { method, headers, agent: this.route.agent, signal }, onResponse);
      req.on('error', (err) => {
        if (signal.aborted) reject(abortError());
        else {
          const how = this.route.description === 'directly' ? '' : ` (${this.route.description})`;
          reject(new BackendUnavailableError(`backend ${url.origin} unreachable${how}: ${err.message}`, err));
        }
      });
      req.end(body);
    });
  }
}

function abortError(): Error {
  const e = new Error('aborted');
  e.name = 'AbortError';
  return e;
}
