import { Features, WorkerToServerMessage } from '../../protocol';
import { Logger } from '../logger';
import { BackendClient } from '../requests/backend-client';
import { ModelCatalog } from './model-catalog';
import { parseJsonObject } from './probes/json';

/** The model-runner seed's polling period of a runner's `GET /v1/capabilities`. */
export const RUNNER_REFRESH_MS = 5_000;
/** As at registration: a larger document is not relayed (frames stay small). */
const MAX_RUNNER_CAPABILITIES_CHARS = 64 * 1024;

/**
 * A parsed JSON document with the keys of every object sorted: two reads of an unchanged document
 * compare equal whatever order the backend wrote its keys in. (The daemon ships with src/worker
 * and src/protocol only, so this is not common/canonical-json.)
 */
export function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** What the refresh needs from a gateway link (the link's session has this shape). */
export interface RunnerChannel {
  readonly open: boolean;
  readonly features: ReadonlySet<string>;
  send(message: WorkerToServerMessage): boolean;
  setTimer(name: 'runner', fn: () => void, ms: number): void;
}

export interface RunnerRefreshOptions {
  /** 0 = never refresh (the document of the registration stands). */
  intervalMs: number;
  timeoutMs: number;
  stopping: () => boolean;
  log: Logger;
}

/**
 * Keeps the gateway's copy of the backend's runner document fresh: every RUNNER_REFRESH_MS it
 * reads `GET /v1/capabilities` again and sends a `runner_capabilities` frame only when the
 * document changed (compared in canonical form, so key order is no change). Only for a backend
 * whose probe found a runner document, and only on a link where the gateway accepted the
 * `runner_capabilities` feature. The fresh document also replaces the probe's, so a reconnect
 * registers with it.
 */
export class RunnerRefresh {
  constructor(
    private readonly backend: BackendClient,
    private readonly catalog: ModelCatalog,
    private readonly options: RunnerRefreshOptions,
  ) {}

  /** Called once the gateway answered `register`: arms the first refresh of this link. */
  start(channel: RunnerChannel): void {
    const doc = this.catalog.probe?.runnerCapabilities;
    if (this.options.intervalMs <= 0 || !doc || !channel.features.has(Features.RUNNER_CAPABILITIES)) return;
    this.schedule(channel, sortedJson(doc));
  }

  private schedule(channel: RunnerChannel, sent: string): void {
    channel.setTimer('runner', () => void this.tick(channel, sent), this.options.intervalMs);
  }

  private async tick(channel: RunnerChannel, sent: string): Promise<void> {
    if (!channel.open || this.options.stopping()) return;
    let latest = sent;
    const doc = await this.read();
    if (doc && channel.open) {
      const text = sortedJson(doc);
      if (text !== sent) {
        const probe = this.catalog.probe;
        if (probe) probe.runnerCapabilities = doc;
        if (channel.send({ type: 'runner_capabilities', runner_capabilities: doc })) latest = text;
      }
    }
    if (channel.open) this.schedule(channel, latest);
  }

  /** The backend's document now, or undefined when it did not answer with one (nothing is sent then). */
  private async read(): Promise<Record<string, unknown> | undefined> {
    try {
      const answer = await this.backend.call('GET', '/v1/capabilities', AbortSignal.timeout(this.options.timeoutMs), undefined, 1 << 20);
      if (answer.status < 200 || answer.status >= 300 || answer.text.length > MAX_RUNNER_CAPABILITIES_CHARS) return undefined;
      return parseJsonObject(answer.text);
    } catch (e) {
      this.options.log.debug('runner document refresh failed', { error: (e as Error).message });
      return undefined;
    }
  }
}
