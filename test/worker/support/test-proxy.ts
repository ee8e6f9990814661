import * as http from 'node:http';
import { AddressInfo, Socket, connect } from 'node:net';
import { CLOSE_MS, START_MS, withDeadline } from '../../support/deadline';

/**
 * A minimal corporate proxy on a loopback port: CONNECT tunnels (what the worker uses for the
 * gateway WebSocket and https backends) and absolute-URI forwarding (plain http backends). It
 * records what it saw so tests can tell whether traffic went through it.
 */
export class TestProxy {
  /** Every CONNECT request: target authority and the headers the proxy could read. */
  readonly tunnels: Array<{ authority: string; headers: http.IncomingHttpHeaders }> = [];
  /** Every forwarded (absolute-URI) request. */
  readonly forwarded: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];
  /** When set, requests without this Proxy-Authorization get 407. */
  requireAuth?: string;
  /** When set, CONNECT is answered with this status instead of a tunnel. */
  refuseConnect?: number;
  private server?: http.Server;
  private readonly sockets = new Set<Socket>();

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => this.forward(req, res));
    this.server.on('connect', (req: http.IncomingMessage, client: Socket, head: Buffer) => this.tunnel(req, client, head));
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await withDeadline(new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve)), START_MS, 'the test proxy did not start listening');
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await withDeadline(new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve()), CLOSE_MS, 'the test proxy did not close');
  }

  private authorized(req: http.IncomingMessage): boolean {
    return !this.requireAuth || req.headers['proxy-authorization'] === this.requireAuth;
  }

  private tunnel(req: http.IncomingMessage, client: Socket, head: Buffer): void {
    const authority = req.url ?? '';
    this.tunnels.push({ authority, headers: req.headers });
    if (!this.authorized(req)) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="corp"\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    if (this.refuseConnect) {
      client.end(`HTTP/1.1 ${this.refuseConnect} Forbidden\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    const colon = authority.lastIndexOf(':');
    const host = authority.slice(0, colon).replace(/^\[|\]$/g, '');
    const upstream = connect(Number(authority.slice(colon + 1)), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    this.sockets.add(upstream);
    upstream.on('close', () => this.sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = req.url ?? '';
    this.forwarded.push({ url, headers: req.headers });
    if (!this.authorized(req)) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="corp"' });
      res.end();
      return;
    }
    if (!/^http:\/\//.test(url)) {
      res.writeHead(400);
      res.end('absolute URI required');
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const upstream = http.request(url, { method: req.method, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  }
}
