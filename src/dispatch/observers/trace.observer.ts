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

/** The open spans of one request. */
interface RequestTrace {
  server: Span;
  /** The current worker attempt (placement to its end: answer, requeue or cancel). */
  attempt: Span | undefined;
  attempts: number;
  /** When its current wait for a worker began (arrival, or a requeue). */
  waitFrom: number;
}

/**
 * A request's trace (OpenTelemetry GenAI conventions): a server span from arrival to its end, a
 * `queue wait` child while it waited for a slot, a `worker attempt` child per placement (its
 * context is the `traceparent` the worker's backend gets) with a `first byte` event. The server
 * span starts at admission (the dispatcher sees a request once keys and limits let it in); a
 * request refused there is a server span with a `rejected` event.
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

  /** Its server span starts here: the dispatcher takes a request once admission (key, tenant limits) passed. */
  submitted(req: RelayRequest, now: number): void {
    this.open(req, now);
  }

  placed(req: RelayRequest, worker: WorkerSnapshot, now: number): void {
    const t = this.traces.get(req) ?? this.open(req, now);
    if (now > t.waitFrom) this.tracing.start('queue wait', SpanKind.INTERNAL, t.server, t.waitFrom, { [ATTR.pool]: req.provider.name }).end(now);
    t.attempt?.end(now);
    t.attempts += 1;
    t.attempt = this.tracing.start(`worker attempt ${worker.name}`, SpanKind.CLIENT, t.server, now, {
      [ATTR.pool]: worker.provider,
      [ATTR.workerId]: worker.id,
      [ATTR.workerName]: worker.name,
      [ATTR.responseModel]: req.targetModel,
      [ATTR.attempt]: t.attempts,
    });
    // The worker's daemon passes request headers on: a backend with OpenTelemetry joins this trace.
    if (req.headers) this.tracing.inject(t.attempt, req.headers);
  }

  firstByte(req: RelayRequest, _worker: WorkerSnapshot, now: number): void {
    const t = this.traces.get(req);
    t?.attempt?.addEvent('first byte', now);
    t?.server.setAttribute(ATTR.ttfbMs, now - req.receivedAt);
  }

  tokens(req: RelayRequest, counts: TokenCounts): void {
    const server = this.traces.get(req)?.server;
    if (!server) return;
    if (counts.prompt_tokens !== undefined) server.setAttribute(ATTR.inputTokens, counts.prompt_tokens);
    if (counts.completion_tokens !== undefined) server.setAttribute(ATTR.outputTokens, counts.completion_tokens);
  }

  requeued(req: RelayRequest): void {
    const t = this.traces.get(req);
    if (!t?.attempt) return;
    const now = this.clock.now();
    t.attempt.setStatus({ code: SpanStatusCode.ERROR, message: 'worker gone before answering' });
    t.attempt.end(now);
    t.attempt = undefined;
    t.waitFrom = now;
  }

  rejected(req: RelayRequest, error: GatewayError): void {
    (this.traces.get(req) ?? this.open(req, req.receivedAt)).server.addEvent('rejected', { [ATTR.errorType]: error.code });
  }

  finished(req: RelayRequest, status: number, now: number, error: GatewayError | undefined): void {
    const t = this.traces.get(req) ?? this.open(req, req.receivedAt || now);
    this.traces.delete(req);
    const s = t.server;
    // One call: each setAttribute checks its value and the span's limits on its own.
    const attributes: Record<string, string | number> = { [ATTR.status]: status, [ATTR.queueWaitMs]: req.waitedMs, [ATTR.requeues]: req.requeues };
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
    if (t.attempt) {
      if (status >= 500) t.attempt.setStatus({ code: SpanStatusCode.ERROR });
      t.attempt.setAttribute(ATTR.status, status);
      t.attempt.end(now);
    }
    s.end(now);
  }

  /** The request's server span, child of the client's `traceparent` when it sent one. */
  private open(req: RelayRequest, now: number): RequestTrace {
    const operation = operationOf(req.endpointPath);
    const attributes: Record<string, string | number | boolean> = {
      [ATTR.operation]: operation,
      [ATTR.requestModel]: req.model,
      [ATTR.stream]: req.isStreaming,
      [ATTR.method]: 'POST',
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
    const t: RequestTrace = { server, attempt: undefined, attempts: 0, waitFrom: now };
    this.traces.set(req, t);
    return t;
  }
}
