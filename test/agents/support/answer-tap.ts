import * as http from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { CLOSE_MS, START_MS, withDeadline } from '../../support/deadline';

/** One answer the gateway gave an agent, as the agent received it. */
export interface TappedAnswer {
  method: string;
  /** Path and query, e.g. `/v1/messages?beta=true`. */
  url: string;
  status: number;
  headers: http.IncomingHttpHeaders;
}

/**
 * A byte-for-byte relay between an agent and the gateway on loopback that notes each answer's
 * status and headers (the CLIs show neither): so a test can see `x-switchboard-translated` on what
 * the agent got. Bodies, streamed ones included, go through untouched as they arrive.
 */
export class AnswerTap {
  readonly answers: TappedAnswer[] = [];
  private server?: http.Server;
  private readonly sockets = new Set<Socket>();
  url = '';

  constructor(private readonly target: string) {}

  async start(): Promise<void> {
    const target = new URL(this.target);
    this.server = http.createServer((req, res) => {
      const upstream = http.request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } },
        (answer) => {
          this.answers.push({ method: req.method ?? '', url: req.url ?? '', status: answer.statusCode ?? 0, headers: answer.headers });
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      // The agent went away before its answer ended: so does the request to the gateway.
      res.on('close', () => {
        if (!res.writableFinished) upstream.destroy();
      });
      req.pipe(upstream);
    });
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await withDeadline(new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve)), START_MS, 'the answer tap did not start listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The answers to inference requests (`POST`), e.g. to `/v1/messages?beta=true`. */
  inference(): TappedAnswer[] {
    return this.answers.filter((a) => a.method === 'POST');
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    if (this.server) await withDeadline(new Promise((resolve) => this.server!.close(resolve)), CLOSE_MS, 'the answer tap did not close');
  }
}
