import { AddressInfo, createServer, Server, Socket } from 'node:net';
import { CLOSE_MS, START_MS, withDeadline } from '../../support/deadline';

/**
 * The agents' HTTP(S) proxy: every request a CLI makes to a host other than loopback (NO_PROXY)
 * lands here, is recorded by its target and refused at once. So a test can show the CLI sent
 * nothing outside the gateway (telemetry, update checks, error reports), and a CLI on a machine
 * with internet access still reaches nothing, while on one without it nothing waits on a timeout.
 */
export class EgressTrap {
  /** `CONNECT` targets (`host:port`) and plain-HTTP URLs, in arrival order. */
  readonly targets: string[] = [];
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  url = '';

  async start(): Promise<void> {
    this.server = createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => socket.destroy());
      let head = '';
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => {
        if (head.includes('\n')) return;
        head += chunk;
        const line = head.split('\r\n')[0];
        if (!head.includes('\n')) return;
        const [, target] = line.split(' ');
        this.targets.push(target ?? line.slice(0, 200));
        socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      });
    });
    await withDeadline(new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve)), START_MS, 'the egress trap did not start listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Proxy variables for a child process: everything but loopback goes to the trap. */
  env(): Record<string, string> {
    const noProxy = '127.0.0.1,localhost,::1';
    return { HTTPS_PROXY: this.url, HTTP_PROXY: this.url, https_proxy: this.url, http_proxy: this.url, NO_PROXY: noProxy, no_proxy: noProxy };
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    if (this.server) await withDeadline(new Promise((resolve) => this.server!.close(resolve)), CLOSE_MS, 'the egress trap did not close');
  }
}
