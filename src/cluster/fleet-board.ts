import Redis from 'ioredis';
import { CLUSTER_KEY_PREFIX } from './redis-membership-store';
import { clusterRedisOptions } from './redis-options';

/**
 * What replicas tell each other about the workers connected to them (cluster mode), over Redis
 * pub/sub: `delta` (some workers changed or left), `full` (every worker of the sender: anything
 * else it once published is gone), `hello` (a replica joined or came back: everyone answers with a
 * `full`). Plain data; the fleet and the queue read and validate `workers` and `queue` themselves.
 */
export interface FleetBoardMessage {
  from: string;
  kind: 'delta' | 'full' | 'hello';
  workers?: unknown[];
  removed?: string[];
  /**
   * The sender's queue (with every `full`, and when it changed): depths per provider and tenant, drain
   * rates, each waiting tenant's oldest request per model and level, its latest tenant turns; waits and
   * turns as durations. Read back by queue/remote-depths.ts (readQueueDepths).
   */
  queue?: unknown;
  /**
   * The version of the forwarding link the sender speaks (cluster-link/link-protocol.ts
   * `LINK_VERSION`; absent: 1). Its workers are used only by replicas that speak it too.
   */
  link?: unknown;
}

export const FLEET_CHANNEL = `${CLUSTER_KEY_PREFIX}fleet`;

/** The board's two ends: publishing is fire-and-forget, receiving is a callback per message. */
export interface FleetBoard {
  /** Sends a message to every other replica; dropped (never queued, never thrown) while Redis is away. */
  publish(message: FleetBoardMessage): void;
  /** Every other replica's messages, parsed; malformed ones are dropped. */
  onMessage(listener: (message: FleetBoardMessage) => void): void;
  /** Called each time the subscription is (re)established: messages may have been missed meanwhile. */
  onReady(listener: () => void): void;
  start(): void;
  stop(): Promise<void>;
}

/** Largest message read from the board (a full fleet of a replica with thousands of workers fits). */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export class RedisFleetBoard implements FleetBoard {
  private readonly pub: Redis;
  private readonly sub: Redis;
  private readonly listeners: Array<(m: FleetBoardMessage) => void> = [];
  private readonly readyListeners: Array<() => void> = [];
  private closed = false;

  constructor(
    url: string,
    private readonly replicaId: string,
    commandTimeoutMs: number,
  ) {
    this.pub = new Redis(url, clusterRedisOptions(commandTimeoutMs, 'switchboard-fleet-pub'));
    // A subscriber connection carries no commands after SUBSCRIBE: no command timeout on it.
    this.sub = new Redis(url, { ...clusterRedisOptions(commandTimeoutMs, 'switchboard-fleet-sub'), commandTimeout: undefined });
    this.pub.on('error', () => undefined);
    this.sub.on('error', () => undefined);
    this.sub.on('message', (channel: string, text: string) => channel === FLEET_CHANNEL && this.receive(text));
    // ioredis subscribes again by itself after a reconnect; 'ready' follows each (re)connection.
    this.sub.on('ready', () => {
      void this.sub.subscribe(FLEET_CHANNEL).then(
        () => this.readyListeners.forEach((l) => l()),
        () => undefined,
      );
    });
  }

  start(): void {
    this.pub.connect().catch(() => undefined);
    this.sub.connect().catch(() => undefined);
  }

  publish(message: FleetBoardMessage): void {
    if (this.closed || this.pub.status !== 'ready') return;
    this.pub.publish(FLEET_CHANNEL, JSON.stringify(message)).catch(() => undefined);
  }

  onMessage(listener: (message: FleetBoardMessage) => void): void {
    this.listeners.push(listener);
  }

  onReady(listener: () => void): void {
    this.readyListeners.push(listener);
  }

  async stop(): Promise<void> {
    this.closed = true;
    this.pub.disconnect();
    this.sub.disconnect();
  }

  private receive(text: string): void {
    if (text.length > MAX_MESSAGE_BYTES) return;
    let m: FleetBoardMessage;
    try {
      m = JSON.parse(text) as FleetBoardMessage;
    } catch {
      return;
    }
    if (!m || typeof m !== 'object' || typeof m.from !== 'string' || m.from === this.replicaId) return;
    if (m.kind !== 'delta' && m.kind !== 'full' && m.kind !== 'hello') return;
    if (m.workers !== undefined && !Array.isArray(m.workers)) return;
    if (m.removed !== undefined && (!Array.isArray(m.removed) || m.removed.some((id) => typeof id !== 'string'))) return;
    for (const l of this.listeners) l(m);
  }
}
