import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { BatchTransport } from './span-batcher';

/** The OTLP/HTTP settings of the standard environment variables. */
export interface OtlpHttpOptions {
  /** The full traces URL (`…/v1/traces`). */
  url: string;
  /** `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`: `key=value,key2=value2`, values URL-encoded. */
  headers: Record<string, string>;
  /** `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT`, ms. */
  timeoutMs: number;
}

/** The exporter settings from the standard variables (the traces-specific ones win). */
export function otlpOptionsFromEnv(url: string, env: NodeJS.ProcessEnv = process.env): OtlpHttpOptions {
  const headers: Record<string, string> = {};
  for (const raw of [env.OTEL_EXPORTER_OTLP_HEADERS, env.OTEL_EXPORTER_OTLP_TRACES_HEADERS]) {
    for (const pair of (raw ?? '').split(',')) {
      const at = pair.indexOf('=');
      if (at <= 0) continue;
      const key = pair.slice(0, at).trim().toLowerCase();
      const value = safeDecode(pair.slice(at + 1).trim());
      if (key) headers[key] = value;
    }
  }
  const timeout = Number(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT || env.OTEL_EXPORTER_OTLP_TIMEOUT);
  return { url, headers, timeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : 10_000 };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Export requests to an OTLP/HTTP collector, JSON encoding (`application/json`, what every
 * collector's `otlphttp` receiver accepts; the body is made by otlp-json.ts). Ours instead of
 * `@opentelemetry/exporter-trace-otlp-http` because the spans are already encoded text (that
 * exporter serializes SDK span objects), and it loads its transport with a dynamic import(), which
 * fails under a VM module loader (Jest). One POST per batch, no retries: a lost batch is only lost traces.
 */
export class OtlpHttpJsonExporter implements BatchTransport {
  private readonly url: URL;

  constructor(private readonly options: OtlpHttpOptions) {
    this.url = new URL(options.url);
  }

  send(body: Buffer): Promise<void> {
    const send = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(this.url, {
        method: 'POST',
        headers: { ...this.options.headers, 'content-type': 'application/json', 'content-length': body.length },
        timeout: this.options.timeoutMs,
      });
      req.on('response', (res) => {
        res.resume();
        const ok = res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300;
        if (ok) resolve();
        else reject(new Error(`collector answered ${res.statusCode}`));
      });
      req.on('timeout', () => req.destroy(new Error('collector did not answer in time')));
      req.on('error', reject);
      req.end(body);
    });
  }
}
