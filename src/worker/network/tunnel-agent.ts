import * as http from 'node:http';
import * as https from 'node:https';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import * as tls from 'node:tls';
import { describeProxy, proxyAuthorization } from './proxy-env';

export interface TunnelAgentOptions {
  proxy: URL;
  /** The target speaks TLS inside the tunnel (wss://, https://). */
  secure: boolean;
  /** Trust and verification for the target (and for an https:// proxy). */
  tls?: Pick<tls.ConnectionOptions, 'ca' | 'rejectUnauthorized'>;
  keepAlive?: boolean;
  /** Time allowed for the proxy to answer CONNECT. Default 15 s. */
  connectTimeoutMs?: number;
}

/**
 * An http.Agent whose connections are CONNECT tunnels through an HTTP(S) proxy, with TLS to the
 * target on top for secure targets. Works for `ws` (its `agent` option) and for node:http(s)
 * requests. The proxy only ever sees `host:port`: headers such as x-worker-secret travel
 * inside the tunnel.
 */
export class TunnelAgent extends http.Agent {
  constructor(private readonly options: TunnelAgentOptions) {
    super({ keepAlive: options.keepAlive ?? false });
    // https.request refuses an agent whose protocol is not https:.
    (this as unknown as { protocol: string }).protocol = options.secure ? 'https:' : 'http:';
  }

  override createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    const done = callback ?? (() => undefined);
    const host = stripBrackets(String(options.host ?? options.hostname ?? 'localhost'));
    const port = Number(options.port ?? (this.options.secure ? 443 : 80));
    this.openTunnel(host, port).then(
      (socket) => {
        if (!this.options.secure) return done(null, socket);
        const secured = tls.connect({
          socket,
          servername: isIP(host) ? undefined : host,
          ca: this.options.tls?.ca,
          rejectUnauthorized: this.options.tls?.rejectUnauthorized ?? true,
        });
        done(null, secured);
      },
      (err: Error) => done(err, undefined as unknown as Duplex),
    );
    return undefined;
  }

  private async openTunnel(host: string, port: number): Promise<Duplex> {
    const { proxy } = this.options;
    const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    const headers: Record<string, string> = { host: authority, ...proxyAuthorization(proxy) };
    const transport = proxy.protocol === 'https:' ? https : http;
    const where = describeProxy(proxy);
    return new Promise((resolve, reject) => {
      const req = transport.request({
        host: stripBrackets(proxy.hostname),
        port: Number(proxy.port || (proxy.protocol === 'https:' ? 443 : 80)),
        method: 'CONNECT',
        path: authority,
        headers,
        agent: false,
        ...(proxy.protocol === 'https:' ? { ca: this.options.tls?.ca, rejectUnauthorized: this.options.tls?.rejectUnauthorized ?? true } : {}),
      });
      const timer = setTimeout(() => {
        req.destroy(new Error(`proxy ${where} did not answer CONNECT ${authority} within ${this.timeoutMs / 1000}s`));
      }, this.timeoutMs);
      req.once('connect', (res, socket, head) => {
        clearTimeout(timer);
        if (res.statusCode !== 200) {
          socket.destroy();
          reject(new Error(`proxy ${where} refused CONNECT ${authority}: ${res.statusCode} ${res.statusMessage ?? ''}`.trim()));
          return;
        }
        if (head.length > 0) socket.unshift(head);
        resolve(socket);
      });
      req.once('response', (res) => {
        // A proxy that answers CONNECT with a normal response (no tunnel) lands here.
        clearTimeout(timer);
        res.resume();
        reject(new Error(`proxy ${where} refused CONNECT ${authority}: ${res.statusCode} ${res.statusMessage ?? ''}`.trim()));
      });
      req.once('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`proxy ${where} unreachable: ${err.message}`, { cause: err }));
      });
      req.end();
    });
  }

  private get timeoutMs(): number {
    return this.options.connectTimeoutMs ?? 15_000;
  }
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}
