import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK, Clock } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { MetricsService } from '../observability/metrics.service';
import { MaybePromise, RateBucket, RateDecision, RateLimiter } from '../rate-limit/rate-limiter';
import { admissionFailure } from '../rate-limit/admission-failure';
import { WorkerNumberBounds } from '../protocol/number-bounds';
import { ChargeClampLog, TokenReporter } from './charge-clamp-log';
import { ClientIdentity } from './client-identity';
import { TenantsService } from './tenants.service';

const MINUTE = 60_000;
const DAY = 24 * 60 * 60_000;

export type LimitKind = 'requests' | 'tokens' | 'budget';

/** The admission verdict: headers for the response either way, an error when refused. */
export interface LimitVerdict {
  headers: Record<string, string>;
  error?: GatewayError;
}

interface Check {
  kind: LimitKind;
  bucket: RateBucket;
  /** 1 for request buckets (taken now); 0 for token buckets (charged when the request ends). */
  cost: number;
}

/**
 * Requests per minute, tokens per minute (per tenant and per API key) and the tenant's daily
 * token budget, checked at admission — before a request queues — through the RateLimiter port
 * (GCRA; in memory, or exact across replicas in Redis). Token buckets are charged with the
 * worker's `token_counts` when a request ends, so a window already over its token limit refuses
 * the next request.
 */
@Injectable()
export class TenantLimits {
  private readonly log = new Logger('Admission');
  private readonly clampLog = new ChargeClampLog((line) => this.log.warn(line));

  constructor(
    private readonly limiter: RateLimiter,
    private readonly tenants: TenantsService,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /**
   * Synchronous with the in-memory limiter; a Promise (that never rejects) with Redis. Never
   * throws either: a failure inside (limiter, Redis) is logged and becomes the verdict's error.
   */
  admit(identity: ClientIdentity, now?: number): MaybePromise<LimitVerdict> {
    try {
      const verdict = this.decide(identity, now);
      return verdict instanceof Promise ? verdict.catch((e: unknown) => this.failed(identity, e)) : verdict;
    } catch (e) {
      return this.failed(identity, e);
    }
  }

  private failed(identity: ClientIdentity, e: unknown): LimitVerdict {
    const error = admissionFailure(e);
    this.log.error(`admission check for tenant ${identity.tenant} failed (answered ${error.code}): ${(e as Error)?.stack ?? String(e)}`);
    return { headers: {}, error };
  }

  private decide(identity: ClientIdentity, now?: number): MaybePromise<LimitVerdict> {
    const checks = this.checksFor(identity);
    if (checks.length === 0) return { headers: {} };
    // Token and budget buckets are only looked at (cost 0) before any request bucket is taken.
    const looks = checks.filter((c) => c.cost === 0);
    const takes = checks.filter((c) => c.cost > 0);
    const run = (list: Check[]) => list.map((c) => this.limiter.tryConsume(c.bucket, c.cost, now));
    const looked = run(looks);
    const finish = (lookDecisions: RateDecision[]): MaybePromise<LimitVerdict> => {
      const refusedLook = lookDecisions.findIndex((d) => !d.allowed);
      if (refusedLook >= 0) return this.verdict(identity, looks, lookDecisions, looks[refusedLook], lookDecisions[refusedLook]);
      const done = (takeDecisions: RateDecision[]) => {
        const all = [...looks, ...takes.slice(0, takeDecisions.length)];
        const decisions = [...lookDecisions, ...takeDecisions];
        const refused = takeDecisions.findIndex((d) => !d.allowed);
        return this.verdict(identity, all, decisions, takes[refused], takeDecisions[refused]);
      };
      return this.takeInOrder(takes, now, [], done);
    };
    return looked.some((d) => d instanceof Promise) ? Promise.all(looked).then(finish) : finish(looked as RateDecision[]);
  }

  /**
   * Takes the request buckets one after the other and stops at the first refusal, so a refused
   * bucket leaves the later ones untouched (synchronous in memory, chained with Redis).
   */
  private takeInOrder(
    takes: Check[],
    now: number | undefined,
    decided: RateDecision[],
    done: (decisions: RateDecision[]) => LimitVerdict,
  ): MaybePromise<LimitVerdict> {
    while (decided.length < takes.length) {
      const c = takes[decided.length];
      const d = this.limiter.tryConsume(c.bucket, c.cost, now);
      if (d instanceof Promise) return d.then((r) => this.step(takes, now, decided, r, done));
      decided.push(d);
      if (!d.allowed) break;
    }
    return done(decided);
  }

  private step(
    takes: Check[],
    now: number | undefined,
    decided: RateDecision[],
    d: RateDecision,
    done: (decisions: RateDecision[]) => LimitVerdict,
  ): MaybePromise<LimitVerdict> {
    decided.push(d);
    return d.allowed ? this.takeInOrder(takes, now, decided, done) : done(decided);
  }

  /**
   * Charges a finished request's tokens to the token buckets that apply (fire and forget). One
   * charge costs a bucket at most one window over its limit (gcra.ts); a report cut down to that
   * is logged (at most once a minute per worker), naming `worker`, who reported it.
   */
  chargeTokens(identity: ClientIdentity, tokens: number, worker?: TokenReporter): void {
    // The count comes from a worker: bounded like the codec bounds each count (a sum may be twice that).
    if (!(tokens > 0)) return;
    const cost = Math.min(Math.ceil(tokens), 2 * WorkerNumberBounds.tokens);
    try {
      for (const c of this.checksFor(identity)) {
        if (c.kind === 'requests') continue;
        const bucket = c.bucket;
        const seen = (d: RateDecision) => {
          if (d.charged !== undefined && d.charged < cost) this.clampLog.clamped(this.clock.now(), worker, identity.tenant, bucket.key, cost, d.charged);
        };
        const result = this.limiter.charge(bucket, cost);
        if (result instanceof Promise)
          result.then(seen, (e: unknown) => this.log.error(`charging ${cost} tokens to ${bucket.key} failed: ${(e as Error)?.message ?? e}`));
        else seen(result);
      }
    } catch (e) {
      // Runs inside a worker's frame handler: a failure here must not cost the worker its session.
      this.log.error(`charging ${cost} tokens for tenant ${identity.tenant} failed: ${(e as Error)?.stack ?? String(e)}`);
    }
  }

  private checksFor(identity: ClientIdentity): Check[] {
    const settings = this.tenants.settingsOf(identity.tenant);
    const checks: Check[] = [];
    const add = (kind: LimitKind, key: string, limit: number | undefined, windowMs: number) => {
      if (limit !== undefined && limit > 0) checks.push({ kind, bucket: { key, limit, windowMs }, cost: kind === 'requests' ? 1 : 0 });
    };
    add('tokens', `tpm:tenant:${identity.tenant}`, settings.tpm, MINUTE);
    add('budget', `tpd:tenant:${identity.tenant}`, settings.tokensPerDay, DAY);
    if (identity.keyId) add('tokens', `tpm:key:${identity.keyId}`, identity.keyLimits?.tpm, MINUTE);
    // The key's own bucket is taken first: a key refused at its own limit then costs its tenant
    // nothing, so one throttled key cannot use up what the tenant's other keys share.
    if (identity.keyId) add('requests', `rpm:key:${identity.keyId}`, identity.keyLimits?.rpm, MINUTE);
    add('requests', `rpm:tenant:${identity.tenant}`, settings.rpm, MINUTE);
    return checks;
  }

  /** Response headers from the most restrictive bucket of each kind, and the error if refused. */
  private verdict(identity: ClientIdentity, checks: Check[], decisions: RateDecision[], refused?: Check, refusal?: RateDecision): LimitVerdict {
    const headers: Record<string, string> = {};
    const tightest = (kind: LimitKind) => {
      let best: RateDecision | undefined;
      checks.forEach((c, i) => {
        if (c.kind === kind && decisions[i] && (!best || decisions[i].remaining < best.remaining)) best = decisions[i];
      });
      return best;
    };
    const now = this.clock.now();
    const put = (suffix: 'requests' | 'tokens', d: RateDecision | undefined) => {
      if (!d) return;
      headers[`x-ratelimit-limit-${suffix}`] = String(d.limit);
      headers[`x-ratelimit-remaining-${suffix}`] = String(d.remaining);
      headers[`x-ratelimit-reset-${suffix}`] = formatDuration(Math.max(0, d.resetAt - now));
    };
    put('requests', tightest('requests'));
    put('tokens', tightest('tokens') ?? tightest('budget'));
    if (!refused || !refusal) return { headers };
    this.metrics.rateLimited(identity.tenant, refused.kind);
    const retryAfterMs = Math.max(1, refusal.retryAfterMs);
    const details = { limit: refusal.limit, remaining: refusal.remaining, resetAt: refusal.resetAt, retryAfterMs };
    return {
      headers,
      error: refused.kind === 'budget' ? Errors.budgetExceeded(details) : Errors.rateLimitExceeded(refused.kind, details, identity.tenant),
    };
  }
}

/** Durations the way OpenAI's rate-limit headers write them: `850ms`, `1.5s`, `6m0s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const secs = ms / 1000;
  if (secs < 60) return `${Math.round(secs * 1000) / 1000}s`;
  const m = Math.floor(secs / 60);
  return `${m}m${Math.round(secs - m * 60)}s`;
}
