import Redis, { RedisOptions } from 'ioredis';
import { ClusterBus, ClusterBusHandler, parseBusMessage } from './cluster-bus.port';
import type { ClusterLogger } from './membership.port';
import { CLUSTER_KEY_PREFIX } from './redis-membership-store';
import { clusterRedisOptions } from './redis-options';

export interface RedisClusterBusOptions {
  url: string;
  /** This replica: its own messages come back from Redis and are ignored. */
  replicaId: string;
  /** A publish fails after this (CLUSTER_REDIS_TIMEOUT_MS). */
  commandTimeoutMs: number;
  /** Reconnect delays double from 50 ms up to this; retrying never stops. */
  maxReconnectDelayMs?: number;
  /** Default `switchboard:cluster:bus`. */
  channel?: string;
  /** Messages kept to send again once Redis answers (oldest dropped beyond it; resync repairs those). */
  maxPending?: number;
  logger?: ClusterLogger;
  /** Extra ioredis options (tests); the fail-fast ones win. */
  redisOptions?: RedisOptions;
}

const CONTEXT = 'ClusterBus';

/** A message as published: its place in this replica's publish order, and its text. */
interface Kept {
  seq: number;
  raw: string;
}

/**
 * Redis pub/sub between replicas: one connection subscribed to the channel, one to publish on.
 * Both fail fast (nothing queues inside ioredis, every command bounded) and reconnect forever with
 * backoff. A message that could not be published is kept (bounded) and published again when the
 * publisher is back; when the subscriber comes back after losing its connection, the resync
 * handlers run (messages of the others may have been missed meanwhile).
 */
export class RedisClusterBus extends ClusterBus {
  readonly enabled = true;
  readonly channel: string;
  private readonly pub: Redis;
  private readonly sub: Redis;
  private readonly handlers = new Map<string, Set<ClusterBusHandler>>();
  private readonly resyncHandlers = new Set<() => void | Promise<void>>();
  /** Unsent messages, in publish order (`seq`). */
  private pending: Kept[] = [];
  private seq = 0;
  private readonly maxPending: number;
  private flushing = false;
  /** From a flush of kept messages until the second sending: every message sent meanwhile. */
  private replay: Kept[] | undefined;
  private replayTimerSet = false;
  /** Direct sends not answered yet (one at a time: a later message waits behind it). */
  private inFlight = 0;
  /** A send failed on a connection still up (a command timeout): no 'ready' will follow to retry. */
  private retryTimer: NodeJS.Timeout | undefined;
  /** The subscriber has been subscribed once; a later subscription follows a lost connection. */
  private subscribedOnce = false;
  private missed = false;
  private closed = false;

  constructor(private readonly options: RedisClusterBusOptions) {
    super();
    this.channel = options.channel ?? `${CLUSTER_KEY_PREFIX}bus`;
    this.maxPending = options.maxPending ?? 1000;
    this.pub = this.connection('switchboard-cluster-bus-pub');
    this.sub = this.connection('switchboard-cluster-bus-sub');
    this.sub.on('message', (channel: string, raw: string) => this.receive(channel, raw));
    this.sub.on('ready', () => void this.subscribeChannel());
    this.sub.on('close', () => {
      if (this.subscribedOnce && !this.closed) this.missed = true;
    });
    this.pub.on('ready', () => {
      if (this.subscribedOnce && !this.missed) void this.flushPending();
    });
    this.pub.connect().catch(() => undefined);
    this.sub.connect().catch(() => undefined);
  }

  publish(topic: string, data: unknown): void {
    if (this.closed) return;
    let raw: string;
    try {
      raw = JSON.stringify({ from: this.options.replicaId, topic, data });
    } catch (e) {
      this.options.logger?.warn(`message on "${topic}" not sent: ${(e as Error).message}`, CONTEXT);
      return;
    }
    const message = { seq: ++this.seq, raw };
    // Behind earlier unsent messages, so receivers see them in order; and behind a send still under
    // way: one that times out may yet run in Redis and is sent again, which must not put it after
    // this one. Kept messages go once the send under way is answered (or at 'ready').
    if (this.pub.status !== 'ready' || this.pending.length > 0 || this.inFlight > 0) return this.keep(message);
    this.inFlight++;
    this.sent(message);
    this.pub.publish(this.channel, raw).then(
      () => {
        this.inFlight--;
        if (this.pending.length > 0) void this.flushPending(false);
      },
      () => {
        this.inFlight--;
        this.keep(message);
        this.retrySoon();
      },
    );
  }

  subscribe(topic: string, handler: ClusterBusHandler): () => void {
    let set = this.handlers.get(topic);
    if (!set) this.handlers.set(topic, (set = new Set()));
    set.add(handler);
    return () => set.delete(handler);
  }

  onResync(handler: () => void | Promise<void>): () => void {
    this.resyncHandlers.add(handler);
    return () => this.resyncHandlers.delete(handler);
  }

  /** Messages waiting for Redis (tests, diagnostics). */
  pendingCount(): number {
    return this.pending.length;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.retryTimer);
    await Promise.all([this.pub, this.sub].map((c) => (c.status === 'ready' ? c.quit().catch(() => c.disconnect()) : c.disconnect())));
  }

  private connection(name: string): Redis {
    const { url, redisOptions, commandTimeoutMs, maxReconnectDelayMs } = this.options;
    const client = new Redis(url, {
      ...redisOptions,
      ...clusterRedisOptions(commandTimeoutMs, name, maxReconnectDelayMs),
      // The subscriber subscribes itself on each 'ready' (subscribeChannel), after which it sends
      // what it kept and resyncs: ioredis must not resubscribe on its own before that.
      autoResubscribe: false,
    });
    // Failed reconnects emit 'error': the membership reports the outage; never thrown here.
    client.on('error', () => undefined);
    return client;
  }

  /**
   * Keeps a message in publish order. A send that was already under way when the connection went
   * fails after later messages were kept at once (the loss is noticed in between), so a failed
   * message goes back to its place, not to the end.
   */
  private keep(message: Kept): void {
    if (this.closed) return;
    let at = this.pending.length;
    while (at > 0 && this.pending[at - 1].seq > message.seq) at--;
    this.pending.splice(at, 0, message);
    if (this.pending.length > this.maxPending) this.pending.shift();
  }

  /** A message was written to Redis: while a second sending is due, it is part of it. */
  private sent(message: Kept): void {
    const replay = this.replay;
    if (!replay) return;
    replay.push(message);
    if (replay.length > this.maxPending) replay.shift();
  }

  /** A send timed out on a connection that stayed up: nothing else would send what is kept now. */
  private retrySoon(): void {
    if (this.closed || this.retryTimer || this.pub.status !== 'ready') return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.flushPending();
    }, this.options.maxReconnectDelayMs ?? 2000);
    this.retryTimer.unref();
  }

  /**
   * Sends the kept messages, in order. Pub/sub keeps nothing for a replica not subscribed yet, and
   * the others reconnect on their own backoff: after the longest reconnect delay the batch is sent
   * once more, together with every message sent since, in publish order, so a replica that was
   * subscribed again in between ends with the latest of each (a cordon kept during the outage and
   * the uncordon published after it arrive in that order the second time too). Receivers apply a
   * message twice harmlessly: they re-read, or repeat a cordon.
   */
  private async flushPending(again = true): Promise<void> {
    if (this.flushing || this.closed) return;
    this.flushing = true;
    let sentNow = 0;
    try {
      while (this.pending.length > 0 && !this.closed) {
        const message = this.pending[0];
        if (!this.replay && again) this.replay = [];
        // Counted in the second sending as it is written (a send that times out may still run in Redis).
        this.sent(message);
        try {
          await this.pub.publish(this.channel, message.raw);
        } catch {
          this.retrySoon(); // still down: the next 'ready' (or, on a live connection, a timer) tries again
          break;
        }
        const at = this.pending.indexOf(message);
        if (at >= 0) this.pending.splice(at, 1);
        sentNow++;
      }
    } finally {
      this.flushing = false;
    }
    if (sentNow === 0 || !again || this.replayTimerSet) return;
    this.replayTimerSet = true;
    const timer = setTimeout(() => {
      this.replayTimerSet = false;
      const span = this.replay ?? [];
      this.replay = undefined;
      if (this.closed) return;
      for (const message of span.sort((x, y) => x.seq - y.seq)) this.keep(message);
      void this.flushPending(false);
    }, this.options.maxReconnectDelayMs ?? 2000);
    timer.unref();
  }

  private async subscribeChannel(): Promise<void> {
    try {
      await this.sub.subscribe(this.channel);
    } catch (e) {
      if (this.closed) return;
      this.options.logger?.warn(`subscribing to ${this.channel} failed (${(e as Error).message}); reconnecting`, CONTEXT);
      this.sub.disconnect(true);
      return;
    }
    const resync = this.missed;
    this.subscribedOnce = true;
    this.missed = false;
    // This replica is listening again: what it could not send goes now (the others are back too, mostly).
    if (this.pub.status === 'ready') void this.flushPending();
    if (!resync) return;
    this.options.logger?.log('cluster bus back: re-reading keys, tenants and providers from the database', CONTEXT);
    for (const handler of [...this.resyncHandlers]) this.run(() => handler(), 'resync');
  }

  private receive(channel: string, raw: string): void {
    if (channel !== this.channel) return;
    const message = parseBusMessage(raw);
    if (!message || message.from === this.options.replicaId) return;
    const handlers = this.handlers.get(message.topic);
    if (!handlers) return;
    for (const handler of [...handlers]) this.run(() => handler(message.data, message.from), `message on "${message.topic}"`);
  }

  /** A handler's failure is logged, never thrown into ioredis. */
  private run(call: () => void | Promise<void>, what: string): void {
    const fail = (e: unknown) => this.options.logger?.warn(`${what} failed: ${(e as Error)?.message ?? String(e)}`, CONTEXT);
    try {
      const result = call();
      if (result instanceof Promise) result.catch(fail);
    } catch (e) {
      fail(e);
    }
  }
}
