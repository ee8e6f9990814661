import * as http from 'node:http';
import * as https from 'node:https';
import { forwardableHeaders } from '../protocol';

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

/** Request headers we never pass to the backend (the gateway's own secret, compression we would have to undo). */
const NOT_FORWARDED = new Set(['x-worker-secret', 'accept-encoding']);

/**
 * Talks to the local OpenAI-compatible server with plain node:http: no default timeouts (a 70B
 * model may think for minutes before the first byte) and an abort that really closes the socket.
 */
export class BackendClient {
  private readonly base: URL;
  private readonly transport: typeof http | typeof https;
  private readonly agent: http.Agent;

  constructor(
    baseUrl: string,
    private readonly options: { apiKey?: string; userAgent?: string } = {},
  ) {
    this.base = new URL(baseUrl);
    this.transport = this.base.protocol === 'https:' ? https : http;
    this.agent = new this.transport.Agent({ keepAlive: true });
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
  post(
    endpointPath: string,
    body: string,
    clientHeaders: Record<string, string> | undefined,
    signal: AbortSignal,
  ): Promise<BackendResponse> {
    return this.send('POST', this.urlFor(endpointPath), this.outgoingHeaders(clientHeaders, body), body, signal);
  }

  /** GET /v1/models → the `data[].id` list. Throws on any failure. */
  async listModels(signal: AbortSignal): Promise<string[]> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (this.options.userAgent) headers['user-agent'] = this.options.userAgent;
    const res = await this.send('GET', this.urlFor('/v1/models'), headers, undefined, signal);
    const chunks: Buffer[] = [];
    for await (const c of res.body) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
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
    this.agent.destroy();
  }

  private send(
    method: string,
    url: URL,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal,
  ): Promise<BackendResponse> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) {
        reject(abortError());
        return;
      }
      const req = this.transport.request(url, { method, headers, agent: this.agent, signal }, (res) => {
        resolve({ status: res.statusCode ?? 502, headers: forwardableHeaders(res.headers), body: res });
      });
      req.on('error', (err) => {
        if (signal.aborted) reject(abortError());
        else reject(new BackendUnavailableError(`backend ${url.origin} unreachable: ${err.message}`, err));
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
