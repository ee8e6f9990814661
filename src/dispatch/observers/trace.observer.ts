import { Inject, Injectable } from '@nestjs/common';
import { Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { TokenCounts } from '../../protocol';
import { CLOCK, Clock } from '../../common/clock';
import type { GatewayError } from '../../common/gateway-error';
import type { WorkerSnapshot } from '../../fleet/worker-snapshot';
import { ATTR, maxTokensOf, operationOf } from '../../telemetry/gen-ai';
import { Tracing } from '../../telemetry/tracing.service';
import type { RelayRequest } from '../relay-request';
import { RequestObserver } from './request-observer';

/** The open span of one request. */
interface RequestTrace {
  server: Span;
  attempts: number;
  /** Its queue time already shown as `queue wait` spans (the dispatcher's `waitedMs` then). */
  waitedMs: number;
  /** Attributes learnt on the way (tokens, time to first byte), set with the final ones in one call. */
  late: Record<string, number>;
  /** The `traceparent` (and `tracestate`) the worker gets: the server span's, made once. */
  propagated: Record<string, string> | undefined;
}

/**
 * A request's trace (OpenTelemetry GenAI conventions): a server span from admission to its end
 * (the dispatcher sees a request once keys and limits let it in), a `queue wait` child span for
 * each wait for a slot, and events on the server span for each worker attempt, a worker lost
 * before answering, the first byte and a refusal. Attempts are events, not spans: a span per
 * attempt doubled the tracing cost per request (docs/enterprise.md#cost). The worker gets the
 * server span's context as `traceparent`, so its backend's spans are children of the request's.
 * Registered only while tracing is on (RequestObservers): off, no span object is ever made.
 * Content (the prompt) is recorded only with `telemetry.capture_content`.
 */
@Injectable()
export class TraceObserver implements RequestObserver {
  private readonly traces = new WeakMap<RelayRequest, RequestTrace>();

  constructor(
    private readonly tracing: Tracing,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  get enabled(): boolean {
    return this.tracing.enabled;
  }

  submitted(req: RelayRequest, now: number): void {
    this.open(req, now);
  }

  placed(req: RelayRequest, worker: WorkerSnapshot, now: number): void {
    const t = this.traces.get(req) ?? this.open(req, now);
    // The dispatcher has just added this wait to `waitedMs` (a request dispatched at once has none).
    const waited = req.waitedMs - t.waitedMs;
    if (waited > 0) {
      this.tracing.start('queue wait', SpanKind.INTERNAL, t.server, now - waited, { [ATTR.pool]: req.provider.name }).end(now);
      t.waitedMs = req.waitedMs;
    }
    t.attempts += 1;
    t.server.addEvent(
      'worker attempt',
      {
        [ATTR.attempt]: t.attempts,
        [ATTR.pool]: worker.provider,
        [ATTR.workerId]: worker.id,
        [ATTR.workerName]: worker.name,
        [ATTR.responseModel]: req.targetModel,
      },
      now,
    );
    // The worker's daemon passes request headers on: a backend with OpenTelemetry joins this trace.
    if (req.headers) {
      if (!t.propagated) this.tracing.inject(t.server, (t.propagated = {}));
      Object.assign(req.headers, t.propagated);
    }
  }

  firstByte(req: RelayRequest, _worker: WorkerSnapshot, now: number): void {
    const t = this.traces.get(req);
    if (!t) return;
    t.server.addEvent('first byte', now);
    t.late[ATTR.ttfbMs] = now - req.receivedAt;
  }

  tokens(req: RelayRequest, counts: TokenCounts): void {
    const t = this.traces.get(req);
    if (!t) return;
    if (counts.prompt_tokens !== undefined) t.late[ATTR.inputTokens] = counts.prompt_tokens;
    if (counts.completion_tokens !== undefined) t.late[ATTR.outputTokens] = counts.completion_tokens;
  }

  requeued(req: RelayRequest): void {
    const t = this.traces.get(req);
    if (!t) return;
    t.server.addEvent('worker lost', { [ATTR.attempt]: t.attempts }, this.clock.now());
  }

  rejected(req: RelayRequest, error: GatewayError): void {
    (this.traces.get(req) ?? this.open(req, req.receivedAt)).server.addEvent('rejected', { [ATTR.errorType]: error.code });
  }

  finished(req: RelayRequest, status: number, now: number, error: GatewayError | undefined): void {
    const t = this.traces.get(req) ?? this.open(req, req.receivedAt || now);
    this.traces.delete(req);
    const s = t.server;
    // One call: each setAttribute checks its value and the span's limits on its own.
    const attributes: Record<string, string | number> = { ...t.late, [ATTR.status]: status, [ATTR.queueWaitMs]: req.waitedMs, [ATTR.requeues]: req.requeues };
    if (req.targetModel) attributes[ATTR.responseModel] = req.targetModel;
    if (req.provider) attributes[ATTR.pool] = req.provider.name;
    if (req.worker) {
      attributes[ATTR.workerId] = req.worker.id;
      attributes[ATTR.workerName] = req.worker.name;
    }
    if (req.queuePosition) attributes[ATTR.queuePosition] = req.queuePosition;
    const errorType = error?.code ?? (status >= 400 ? String(status) : undefined);
    if (errorType) attributes[ATTR.errorType] = errorType;
    s.setAttributes(attributes);
    if (status >= 500 || error) s.setStatus({ code: SpanStatusCode.ERROR, message: error?.code ?? `HTTP ${status}` });
    s.end(now);
  }

  /** The request's server span, child of the client's `traceparent` when it sent one. */
  private open(req: RelayRequest, now: number): RequestTrace {
    const operation = operationOf(req.endpointPath);
    const attributes: Record<string, string | number | boolean> = {
      [ATTR.operation]: operation,
      [ATTR.requestModel]: req.model,
      [ATTR.stream]: req.isStreaming,
      [ATTR.path]: req.endpointPath,
      [ATTR.tenant]: req.tenant,
      [ATTR.correlationId]: req.correlationId,
      [ATTR.requestId]: req.id,
    };
    if (req.keyId) attributes[ATTR.keyId] = req.keyId;
    const maxTokens = maxTokensOf(req.body);
    if (maxTokens !== undefined) attributes[ATTR.maxTokens] = maxTokens;
    if (this.tracing.captureContent) attributes[ATTR.inputMessages] = req.body;
    const server = this.tracing.start(`${operation} ${req.model}`, SpanKind.SERVER, this.tracing.parentOf(req.headers), req.receivedAt || now, attributes);
    const t: RequestTrace = { server, attempts: 0, waitedMs: 0, late: {}, propagated: undefined };
    this.traces.set(req, t);
    return t;
  }
}
