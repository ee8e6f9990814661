import { request } from 'node:http';
import type { TestGateway } from '../support/gateway';
import type { RawResponse } from '../support/http';
import { parsePrometheusText } from '../observability/prometheus-text';

/**
 * One HTTP request from a chosen local address (127.0.0.x: all of 127/8 is loopback on Linux), so a
 * test can be two different clients without a proxy in between.
 */
export function fromAddress(
  gw: TestGateway,
  localAddress: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<RawResponse> {
  const url = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        localAddress,
        headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: new Headers(res.headers as Record<string, string>), text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Current values of a labelled counter family, by its `reason` label. */
export async function counterByReason(gw: TestGateway, name: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const family = parsePrometheusText(text).get(name);
  if (!family) return {};
  return Object.fromEntries(family.samples.map((s) => [s.labels.reason, s.value]));
}
