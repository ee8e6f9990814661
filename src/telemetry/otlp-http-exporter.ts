import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ExportResult, ExportResultCode } from '@opentelemetry/core';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

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
 * Spans to an OTLP/HTTP collector, JSON encoding (`application/json`, what every collector's
 * `otlphttp` receiver accepts), serialized by the OpenTelemetry transformer. Ours instead of
 * `@opentelemetry/exporter-trace-otlp-http` because that one loads its transport with a dynamic
 * import(), which fails under a VM module loader (Jest); the wire format is the same. One POST per
 * batch (the BatchSpanProcessor batches), no retries: a lost batch is only lost traces.
 */
export class OtlpHttpJsonExporter implements SpanExporter {
  private stopped = false;

  constructor(private readonly options: OtlpHttpOptions) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    if (this.stopped) return done({ code: ExportResultCode.FAILED, error: new Error('exporter shut down') });
    const body = JsonTraceSerializer.serializeRequest(spans);
    if (!body) return done({ code: ExportResultCode.FAILED, error: new Error('spans could not be serialized') });
    const url = new URL(this.options.url);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, {
      method: 'POST',
      headers: { ...this.options.headers, 'content-type': 'application/json', 'content-length': body.byteLength },
      timeout: this.options.timeoutMs,
    });
    let settled = false;
    const finish = (result: ExportResult) => {
      if (settled) return;
      settled = true;
      done(result);
    };
    req.on('response', (res) => {
      res.resume();
      const ok = res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300;
      finish(ok ? { code: ExportResultCode.SUCCESS } : { code: ExportResultCode.FAILED, error: new Error(`collector answered ${res.statusCode}`) });
    });
    req.on('timeout', () => req.destroy(new Error('collector did not answer in time')));
    req.on('error', (error) => finish({ code: ExportResultCode.FAILED, error }));
    req.end(body);
  }

  shutdown(): Promise<void> {
    this.stopped = true;
    return Promise.resolve();
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
}
