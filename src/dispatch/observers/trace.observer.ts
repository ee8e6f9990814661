import { Inject, Injectable } from '@nestjs/common';
import { SpanKind } from '@opentelemetry/api';
import { CLOCK, Clock } from '../../common/clock';
import type { GatewayError } from '../../common/gateway-error';
import type { WorkerSnapshot } from '../../fleet/worker-snapshot';
import { ATTR, operationOf } from '../../telemetry/gen-ai';
import type { TraceSpan } from '../../telemetry/trace-span';
import { Tracing } from '../../telemetry/tracing.service';
import type { RelayRequest } from '../relay-request';
import { RequestObserver } from './request-observer';

/** The open span of one request. */
interface RequestTrace {
  server: TraceSpan;
  attempts: number;
  /** Its queue time already shown as `queue wait` spans (the dispatcher's `waitedMs` then). */
  waitedMs: number;
}

/**
 * A request's trace (OpenTelemetry GenAI conventions): a server span from admission to its end
 * (the dispatcher sees a request once keys and limits let it in), a `queue wait` child span for
 * each wait for a slot, and events on the server span for each worker attempt, a worker lost
 * before answering, the first byte and a refusal. Attempts are events, not spans: a span per
 * attempt doubled the tracing cost per request (docs/enterprise.md#what-a-trace-holds). The worker gets the
 * server span's context as `traceparent`, so its backend's spans are children of the request's.
 * Registered only while tracing is on (RequestObservers): off, no span object is ever made.
 * Content (the prompt) is recorded only with `telemetry.capture_content`.
 */
@Injectable()
export class TraceObserver implements RequestObserver {
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
    const t = (req.trace as RequestTrace | undefined) ?? this.open(req, now);
    // The dispatcher has just added this wait to `waitedMs` (a request dispatched at once has none).
    const waited = req.waitedMs - t.waitedMs;
    if (waited > 0) {
      if (t.server.recording)
        this.tracing
          .child('queue wait', SpanKind.INTERNAL, t.server, now - waited)
          .set(ATTR.pool, req.provider.name)
          .end(now);
      t.waitedMs = req.waitedMs;
    }
    t.attempts += 1;
    const s = t.server;
    if (s.recording) {
      s.event('worker attempt', now, [
        ATTR.attempt,
        t.attempts,
        ATTR.pool,
        worker.provider,
        ATTR.workerId,
        worker.id,
        ATTR.workerName,
        worker.name,
        ATTR.responseModel,
        req.targetModel,
      ]);
    }
    // The worker's daemon passes request headers on: a backend with OpenTelemetry joins this trace.
    if (req.headers) this.tracing.inject(t.server, req.headers);
  }

  requeued(req: RelayRequest): void {
    const t = req.trace as RequestTrace | undefined;
    if (!t) return;
    t.server.event('worker lost', this.clock.now(), [ATTR.attempt, t.attempts]);
  }

  rejected(req: RelayRequest, error: GatewayError): void {
    const s = ((req.trace as RequestTrace | undefined) ?? this.open(req, req.receivedAt)).server;
    s.event('rejected', this.clock.now(), [ATTR.errorType, error.code]);
  }

  finished(req: RelayRequest, status: number, now: number, error: GatewayError | undefined): void {
    const t = (req.trace as RequestTrace | undefined) ?? this.open(req, req.receivedAt || now);
    req.trace = undefined;
    const s = t.server;
    if (!s.recording) return;
    // Every attribute is set here, from the request: its own fields never change, and the first
    // byte and token counts are on it by now. Nothing is built for the span while the request
    // lives, and the first byte and the tokens need no hooks of their own.
    s.set(ATTR.operation, operationOf(req.endpointPath))
      .set(ATTR.requestModel, req.model)
      .set(ATTR.stream, req.isStreaming)
      .set(ATTR.path, req.endpointPath)
      .set(ATTR.tenant, req.tenant)
      .set(ATTR.correlationId, req.correlationId)
      .set(ATTR.requestId, req.id)
      .set(ATTR.keyId, req.keyId || undefined)
      .set(ATTR.maxTokens, req.maxTokens);
    if (this.tracing.captureContent) s.set(ATTR.inputMessages, req.body);
    if (req.arrivedAt > 0 && req.receivedAt > 0) s.event('admitted', req.receivedAt);
    if (req.firstByteAt > 0) s.event('first byte', req.firstByteAt).set(ATTR.ttfbMs, req.firstByteAt - req.receivedAt);
    const tokens = req.tokenCounts;
    if (tokens) s.set(ATTR.inputTokens, tokens.prompt_tokens).set(ATTR.outputTokens, tokens.completion_tokens);
    s.set(ATTR.status, status).set(ATTR.queueWaitMs, req.waitedMs).set(ATTR.requeues, req.requeues);
    if (req.targetModel) s.set(ATTR.responseModel, req.targetModel);
    if (req.provider) s.set(ATTR.pool, req.provider.name);
    if (req.worker) s.set(ATTR.workerId, req.worker.id).set(ATTR.workerName, req.worker.name);
    if (req.queuePosition) s.set(ATTR.queuePosition, req.queuePosition);
    s.set(ATTR.errorType, error?.code ?? (status >= 400 ? String(status) : undefined));
    // A server span's status is an error only for 5xx: a client's 4xx is its error, named in `error.type`.
    if (status >= 500) s.error(error?.code ?? `HTTP ${status}`);
    s.end(now);
  }

  /** The request's server span, child of the client's `traceparent` when it sent one. */
  private open(req: RelayRequest, now: number): RequestTrace {
    const name = `${operationOf(req.endpointPath)} ${req.model}`;
    // From the request's arrival: admission (key, body, limits) is part of it, ended by the `admitted` event.
    const server = this.tracing.start(name, SpanKind.SERVER, this.tracing.parentOf(req.headers), req.arrivedAt || req.receivedAt || now);
    const t: RequestTrace = { server, attempts: 0, waitedMs: 0 };
    req.trace = t;
    return t;
  }
}
