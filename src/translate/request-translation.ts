import { Logger } from '@nestjs/common';
import { GatewayError } from '../common/gateway-error';
import type { RequestTranslator, ResponseSink } from '../dispatch/relay-request';
import type { DialectCodec, Json } from './dialect-codec';
import { TranslatingSink } from './translating-sink';
import { DelegatingSink } from './delegating-sink';

const log = new Logger('Translation');

/** Kinds that announce themselves in `x-switchboard-translated` (count_tokens through `/tokenize` does not). */
const ANNOUNCED = new Set(['anthropic-messages', 'openai-responses']);

/**
 * One request's translation: its body translated once (only if routing ever picks translation, so
 * native requests pay nothing), the served model set per worker, and a fresh translating sink for
 * each translated attempt.
 */
export class RequestTranslation implements RequestTranslator {
  private translated: Json | undefined;
  private error: GatewayError | undefined;
  private last: { model: string; body: string } | undefined;

  constructor(
    private readonly codec: DialectCodec,
    /** The client's parsed body (read only). */
    protected readonly body: Json,
    private readonly streaming: boolean,
    /** The model the client asked for: answers name it. */
    private readonly model: string,
    private readonly client: ResponseSink,
    private readonly correlationId: string,
  ) {}

  get endpoint(): string {
    return this.codec.endpoint;
  }

  /** What routing and `x-switchboard-translated` call it. */
  get kind(): string {
    return this.codec.kind;
  }

  prepare(): GatewayError | undefined {
    if (this.translated || this.error) return this.error;
    const result = this.codec.toChat(this.body, this.streaming);
    if (result instanceof GatewayError) {
      this.error = result;
      return result;
    }
    this.translated = result.body;
    if (result.dropped.length > 0) {
      log.debug({
        msg: 'fields without a chat-completions equivalent were dropped',
        kind: this.codec.kind,
        dropped: result.dropped,
        correlation_id: this.correlationId,
      });
    }
    return undefined;
  }

  bodyFor(model: string): string {
    if (this.last?.model !== model) this.last = { model, body: JSON.stringify({ ...this.translated, model }) };
    return this.last.body;
  }

  sinkFor(translated: boolean): ResponseSink {
    if (!translated) return this.client;
    return new TranslatingSink(
      this.client,
      this.codec,
      { model: this.model, request: this.body },
      ANNOUNCED.has(this.codec.kind) ? this.codec.kind : undefined,
    );
  }
}

/** Marks an answer the gateway estimated itself (no worker had a tokenizer). */
export const ESTIMATE_HEADER = 'x-switchboard-estimate';

/**
 * `/v1/messages/count_tokens`: a backend's own route, else its tokenizer (`/tokenize`), else —
 * when no worker can take it at all — the gateway's estimate, so agents that count before
 * sending never fail on a fleet without tokenizers.
 */
export class CountTokensTranslation extends RequestTranslation {
  constructor(
    codec: DialectCodec,
    body: Json,
    model: string,
    private readonly sink: ResponseSink,
    correlationId: string,
    private readonly estimate: (body: Json) => number,
  ) {
    super(codec, body, false, model, sink, correlationId);
  }

  /** Natively, a backend without the route (404, 405, 501) is answered by the estimate too. */
  override sinkFor(translated: boolean): ResponseSink {
    return translated ? super.sinkFor(true) : new EstimateOnMissingRoute(this.sink, () => this.answerEstimate());
  }

  answerWithout(): boolean {
    if (this.sink.clientGone) return false;
    this.answerEstimate();
    return true;
  }

  private answerEstimate(): void {
    const body = JSON.stringify({ input_tokens: this.estimate(this.body) });
    // A gateway header: the sink passes only backend headers it relays (no `x-switchboard-*`) from sendComplete's.
    this.sink.addHeaders?.({ [ESTIMATE_HEADER]: 'true' });
    this.sink.sendComplete(200, { 'content-type': 'application/json' }, body);
  }
}

/** Statuses by which a backend says it has no such route (endpointPresent's rule in the worker's probes). */
const ROUTE_MISSING = new Set([404, 405, 501]);

/**
 * count_tokens sent natively to a worker whose endpoints are unknown (a ModelRelay worker advertises
 * none): when its backend turns out not to have the route, the client gets the estimate instead of
 * the backend's 404, as it would have from a worker that said so.
 */
class EstimateOnMissingRoute extends DelegatingSink {
  constructor(
    client: ResponseSink,
    /** Answers the client with the estimate instead. */
    private readonly answerEstimate: () => void,
  ) {
    super(client);
  }

  override sendComplete(status: number, headers: Record<string, string>, body: string | readonly string[]): void {
    if (ROUTE_MISSING.has(status)) return this.answerEstimate();
    this.client.sendComplete(status, headers, body);
  }
}
