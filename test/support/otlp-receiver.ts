import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP JSON export carries it, attributes flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number | boolean>;
  events: Array<{ name: string; attributes: Record<string, string | number | boolean> }>;
  status: { code?: number; message?: string };
  resource: Record<string, string | number | boolean>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type OtlpAttr = { key: string; value: OtlpValue };

function flat(attrs: OtlpAttr[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attrs ?? []) {
    if (value.stringValue !== undefined) out[key] = value.stringValue;
    else if (value.intValue !== undefined) out[key] = Number(value.intValue);
    else if (value.doubleValue !== undefined) out[key] = value.doubleValue;
    else if (value.boolValue !== undefined) out[key] = value.boolValue;
  }
  return out;
}

const ms = (nanos: string | number) => Number(BigInt(nanos) / 1_000_000n);

/**
 * A real OTLP/HTTP trace receiver on a free loopback port: `POST /v1/traces` with the JSON
 * encoding (what @opentelemetry/exporter-trace-otlp-http sends), answered 200 like a collector.
 * Keeps every span and every raw body (to look for what must never be exported).
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly bodies: string[] = [];
  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    const receiver = new OtlpReceiver(server);
    server.on('request', (req, res) => {
      void receiver.take(req).then(
        () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{}');
        },
        () => {
          res.writeHead(400);
          res.end();
        },
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async take(req: IncomingMessage): Promise<void> {
    if (req.method !== 'POST' || req.url !== '/v1/traces') throw new Error(`unexpected ${req.method} ${req.url}`);
    if (!String(req.headers['content-type']).startsWith('application/json')) throw new Error('not OTLP JSON');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    this.bodies.push(text);
    const body = JSON.parse(text);
    for (const rs of body.resourceSpans ?? []) {
      const resource = flat(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          this.spans.push({
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId || undefined,
            name: s.name,
            kind: s.kind,
            startMs: ms(s.startTimeUnixNano),
            endMs: ms(s.endTimeUnixNano),
            attributes: flat(s.attributes),
            events: (s.events ?? []).map((e: { name: string; attributes?: OtlpAttr[] }) => ({ name: e.name, attributes: flat(e.attributes) })),
            status: s.status ?? {},
            resource,
          });
        }
      }
    }
  }
}
