import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { CLOSE_MS, START_MS, withDeadline } from '../../support/deadline';
import { readyStatus } from './processes';

const CHECK_MS = 200;

/**
 * A tiny load balancer in front of gateway replicas, like the one an operator runs: it checks every
 * replica's `/health/ready` every 200 ms and sends each request to the next replica (round robin)
 * whose last check answered 200. It retries nothing: a request the replica fails, or a connection
 * it drops, reaches the client as a 502. One upstream connection per request (no keep-alive reuse,
 * so a replica closing an idle kept-alive socket cannot race a new request on it).
 */
export class Balancer {
  private server?: http.Server;
  private timer?: NodeJS.Timeout;
  private readonly ready = new Set<string>();
  private turn = 0;
  /** Requests sent to each upstream. */
  readonly sent = new Map<string, number>();

  constructor(private readonly upstreams: string[]) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), CHECK_MS);
    this.server = http.createServer((req, res) => this.forward(req, res));
    await withDeadline(new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve)), START_MS, 'balancer did not listen');
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    if (!this.server) return;
    this.server.closeAllConnections();
    await withDeadline(new Promise<void>((resolve) => this.server!.close(() => resolve())), CLOSE_MS, 'balancer did not close');
  }

  private async check(): Promise<void> {
    await Promise.all(
      this.upstreams.map(async (u) => {
        if ((await readyStatus(u)) === 200) this.ready.add(u);
        else this.ready.delete(u);
      }),
    );
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const ready = this.upstreams.filter((u) => this.ready.has(u));
    if (ready.length === 0) {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('balancer: no ready replica');
      return;
    }
    const target = ready[this.turn++ % ready.length];
    this.sent.set(target, (this.sent.get(target) ?? 0) + 1);
    const url = new URL(req.url ?? '/', target);
    const up = http.request(url, { method: req.method, headers: { ...req.headers, host: url.host, connection: 'close' }, agent: false });
    up.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, { ...answer.headers, 'x-upstream': target });
      answer.pipe(res);
      answer.on('aborted', () => res.destroy());
      answer.on('error', () => res.destroy());
    });
    up.on('error', (e) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(502, { 'content-type': 'text/plain', 'x-upstream': target });
      res.end(`balancer: ${target} failed: ${e.message}`);
    });
    req.pipe(up);
  }
}
