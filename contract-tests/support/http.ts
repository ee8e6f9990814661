import { request as httpRequest, IncomingHttpHeaders, IncomingMessage, ClientRequest } from 'node:http';
import { target } from './target';

export interface HttpResult {
  status: number;
  headers: IncomingHttpHeaders;
  /** Exact bytes of the response body. */
  body: Buffer;
  text: string;
  /** Parsed JSON body (throws with the raw text if it is not JSON). */
  json(): any;
  /** True when the connection ended before the response body completed. */
  aborted: boolean;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Base URL; default: the suite's target. */
  baseUrl?: string;
}

/**
 * One raw HTTP/1.1 exchange over a fresh connection (no keep-alive pooling), exposing the exact
 * bytes received and when they arrived, and able to drop the connection like a vanishing client.
 */
export class HttpExchange {
  readonly chunks: Buffer[] = [];
  readonly response: Promise<IncomingMessage>;
  readonly done: Promise<HttpResult>;
  private req: ClientRequest;
  private res: IncomingMessage | undefined;
  private byteWaiters: Array<{ pred: (text: string) => boolean; resolve: () => void }> = [];
  private finished = false;

  constructor(path: string, opts: RequestOptions = {}) {
    const url = new URL(path, opts.baseUrl ?? target().url);
    const body = opts.body;
    const headers: Record<string, string | number> = { ...(opts.headers ?? {}) };
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')) {
      headers['content-length'] = Buffer.byteLength(body);
    }
    this.req = httpRequest(url, { method: opts.method ?? (body === undefined ? 'GET' : 'POST'), headers, agent: false });
    this.response = new Promise((resolve, reject) => {
      this.req.once('response', resolve);
      this.req.once('error', reject);
    });
    this.done = new Promise<HttpResult>((resolve, reject) => {
      this.req.once('error', (e) => {
        if (this.res) resolve(this.result(true));
        else reject(e);
      });
      this.req.once('response', (res) => {
        this.res = res;
        res.on('data', (d: Buffer) => {
          this.chunks.push(d);
          this.checkByteWaiters();
        });
        res.once('end', () => {
          this.finished = true;
          resolve(this.result(false));
        });
        res.once('aborted', () => resolve(this.result(true)));
        res.once('error', () => resolve(this.result(true)));
        res.once('close', () => {
          if (!this.finished) resolve(this.result(true));
        });
      });
    });
    // Avoid unhandled rejections for exchanges whose outcome a test does not await.
    this.response.catch(() => undefined);
    this.done.catch(() => undefined);
    if (body !== undefined) this.req.write(body);
    this.req.end();
  }

  /** Bytes received so far. */
  received(): Buffer {
    return Buffer.concat(this.chunks);
  }

  receivedText(): string {
    return this.received().toString('utf8');
  }

  /** Resolves once the body received so far satisfies `pred` (waiting only, never timing). */
  waitForText(pred: (text: string) => boolean): Promise<void> {
    if (pred(this.receivedText())) return Promise.resolve();
    return new Promise((resolve) => this.byteWaiters.push({ pred, resolve }));
  }

  /** Drops the TCP connection, as a client that goes away does. */
  abort(): void {
    this.req.destroy();
    this.res?.destroy();
  }

  private checkByteWaiters(): void {
    const text = this.receivedText();
    this.byteWaiters = this.byteWaiters.filter((w) => {
      if (!w.pred(text)) return true;
      w.resolve();
      return false;
    });
  }

  private result(aborted: boolean): HttpResult {
    const body = this.received();
    const res = this.res!;
    const text = body.toString('utf8');
    return {
      status: res.statusCode ?? 0,
      headers: res.headers,
      body,
      text,
      aborted,
      json() {
        try {
          return JSON.parse(text);
        } catch {
          throw new Error(`response body is not JSON (status ${res.statusCode}): ${text.slice(0, 500)}`);
        }
      },
    };
  }
}

export function exchange(path: string, opts: RequestOptions = {}): HttpExchange {
  return new HttpExchange(path, opts);
}

export function httpCall(path: string, opts: RequestOptions = {}): Promise<HttpResult> {
  return new HttpExchange(path, opts).done;
}

export const JSON_HEADERS = { 'content-type': 'application/json' };

/** POST a raw JSON string (sent byte-for-byte) to `path`. */
export function postJson(path: string, body: string, headers: Record<string, string> = {}, baseUrl?: string): HttpExchange {
  return new HttpExchange(path, { method: 'POST', body, headers: { ...JSON_HEADERS, ...headers }, baseUrl });
}
