import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';

/**
 * `METRICS_PORT`: GET /metrics on a plain HTTP listener of its own, so operators can keep
 * metrics off the client port. It serves the app's registry and nothing else (404), and closes
 * with the app.
 */
@Injectable()
export class MetricsListener implements OnApplicationShutdown {
  private server: Server | undefined;

  constructor(private readonly registry: Registry) {}

  /** Opens the listener; resolves with the port it got (`port` 0 = any free port). */
  async start(host: string, port: number): Promise<number> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found\n');
        return;
      }
      this.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': this.registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
        () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    return (server.address() as AddressInfo).port;
  }

  /** The port it listens on, while it does. */
  get port(): number | undefined {
    const address = this.server?.address();
    return address && typeof address === 'object' ? address.port : undefined;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
