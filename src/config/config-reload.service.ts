import { Inject, Injectable, Logger } from '@nestjs/common';
import { AppConfig } from './app-config';
import { APP_CONFIG } from './config-token';
import { configOrigin, ConfigError, loadConfig } from './load-config';
import type { Env } from '../common/config-reader';
import { changedKeys, restartKeys } from './restart-settings';
import { envName, yamlPath } from './setting';
import { ROUTING_SETTINGS } from './sections/routing';
import { SERVER_SETTINGS, WORKER_RECORD_SETTINGS } from './sections/server';

/**
 * One module's part of a configuration reload (providers, routing, tenants). The module owns its
 * part: it reads it from the new configuration, compares it with its running state and swaps it in.
 */
export interface ReloadParticipant {
  /** Its key in the answer's `changes`. */
  readonly section: string;
  /** Parts commit in ascending order (all within one synchronous step). */
  readonly order: number;
  /**
   * Builds the new state — asynchronous work such as hashing secrets included — without changing
   * anything. Problems that make the new configuration unusable go to `problems`.
   */
  prepare(next: AppConfig, problems: string[]): PreparedChange | Promise<PreparedChange>;
}

export interface PreparedChange {
  /** Checked again right before the swap (synchronously), against changes made meanwhile (admin API). */
  check?(problems: string[]): void;
  /** Swaps the new state in. Synchronous and infallible; returns what changed. */
  commit(): object;
  /** After every part committed: writes behind (database), best effort. */
  persist?(): Promise<void>;
  /** Tolerated oddities of the new configuration (logged, and listed in the answer). */
  warnings?: string[];
}

export interface ReloadResult {
  reloaded: true;
  config_file: string | null;
  changes: Record<string, object>;
  /** Settings changed in the file that need a restart: not applied. */
  restart_required: string[];
  warnings: string[];
}

/**
 * How a reload no request asked for (SIGHUP) ended: the result, or the problems of a refused file,
 * or an unexpected error. The audit trail observes these (governance/admin-audit.ts); a request's
 * reload (`POST /admin/reload`) is audited with the request instead.
 */
export interface SignalReload {
  trigger: string;
  result?: ReloadResult;
  problems?: string[];
  error?: string;
}

export type SignalReloadObserver = (event: SignalReload) => Promise<void>;

/** The new configuration was refused as a whole; nothing changed. */
export class ReloadRejected extends Error {
  constructor(readonly problems: string[]) {
    super(`configuration reload refused (${problems.length} problem${problems.length === 1 ? '' : 's'}): ${problems.join('; ')}`);
    this.name = 'ReloadRejected';
  }
}

const W = WORKER_RECORD_SETTINGS;
const INSTANCE_ID = yamlPath(W, W.settings.instanceId)!;
const MAX_REQUEUES = yamlPath(SERVER_SETTINGS, SERVER_SETTINGS.settings.maxRequeues)!;
const MAX_RETRIES = yamlPath(ROUTING_SETTINGS, ROUTING_SETTINGS.settings.maxRetries)!;
const PROVIDER_NAME_SETTING = SERVER_SETTINGS.settings.providerName;
const PROVIDER_NAME = yamlPath(SERVER_SETTINGS, PROVIDER_NAME_SETTING)!;
/**
 * The `restart` keys of the declarations (restart-settings.ts), but for the two compared by hand
 * below: the instance id and the requeue limit.
 */
const RESTART_KEYS = restartKeys().filter((k) => ![INSTANCE_ID, MAX_REQUEUES, MAX_RETRIES].includes(k.name));

/**
 * `POST /admin/reload` and SIGHUP: re-reads CONFIG_FILE with `loadConfig` (the environment of the
 * boot still wins over the file) and hands each module its part. Everything is validated and
 * prepared first (secrets hashed, new routing and tenants built); then every part is swapped in
 * within one synchronous step, so a request sees either the old configuration or the new one.
 * An invalid file changes nothing. Settings that need a restart are reported, not applied.
 */
@Injectable()
export class ConfigReloadService {
  private readonly log = new Logger('ConfigReload');
  private readonly participants: ReloadParticipant[] = [];
  private readonly signalObservers: SignalReloadObserver[] = [];
  private readonly env: Env;
  private readonly instanceIdGenerated: boolean;
  /** Reloads (configuration and pools) run one at a time. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(@Inject(APP_CONFIG) private readonly boot: AppConfig) {
    const origin = configOrigin(boot);
    this.env = origin?.env ?? { ...process.env };
    this.instanceIdGenerated = origin?.instanceIdGenerated ?? false;
  }

  /** Called by each module that owns a reloadable part, when it is constructed. */
  register(participant: ReloadParticipant): void {
    this.participants.push(participant);
    this.participants.sort((a, b) => a.order - b.order);
  }

  /** Told how every reload by signal ended (the audit trail). */
  observeSignalReloads(observer: SignalReloadObserver): void {
    this.signalObservers.push(observer);
  }

  /** A reload by signal (`trigger`, e.g. SIGHUP): like reload(), and its end is told to the observers. */
  async reloadBySignal(trigger: string): Promise<ReloadResult> {
    try {
      const result = await this.reload(trigger);
      await this.tell({ trigger, result });
      return result;
    } catch (e) {
      await this.tell(e instanceof ReloadRejected ? { trigger, problems: e.problems } : { trigger, error: (e as Error).message });
      throw e;
    }
  }

  private async tell(event: SignalReload): Promise<void> {
    await Promise.all(
      this.signalObservers.map((o) => o(event).catch((e: unknown) => this.log.error(`signal reload observer failed: ${(e as Error).message}`))),
    );
  }

  /** Runs `task` once every reload (or pool reload) queued before it has finished; later ones wait for it. */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.tail.then(task, task);
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Re-reads the configuration and applies it all or nothing; throws ReloadRejected naming every problem. */
  reload(trigger: string): Promise<ReloadResult> {
    return this.exclusive(async () => {
      try {
        const result = await this.apply();
        this.log.log({
          msg: `configuration reloaded (${trigger})${result.restart_required.length ? `; needs a restart to apply: ${result.restart_required.join(', ')}` : ''}`,
          changes: result.changes,
          restart_required: result.restart_required,
        });
        for (const w of result.warnings) this.log.warn(w);
        return result;
      } catch (e) {
        if (e instanceof ReloadRejected) {
          this.log.error({ msg: `${e.message} (${trigger}); the running configuration stays`, problems: e.problems });
        }
        throw e;
      }
    });
  }

  private async apply(): Promise<ReloadResult> {
    const restartRequired: string[] = [];
    let next = this.read(this.env);
    if (next.defaultProviderName !== this.boot.defaultProviderName) {
      // Workers without ?provider= keep joining the boot's default provider: build the provider set as before.
      restartRequired.push(PROVIDER_NAME);
      next = this.read({ ...this.env, [envName(PROVIDER_NAME_SETTING, this.env)]: this.boot.defaultProviderName });
    }
    for (const key of this.restartOnlyChanges(next)) if (!restartRequired.includes(key)) restartRequired.push(key);

    const problems: string[] = [];
    const prepared: Array<{ participant: ReloadParticipant; change: PreparedChange }> = [];
    for (const participant of this.participants) {
      prepared.push({ participant, change: await participant.prepare(next, problems) });
    }
    if (problems.length === 0) for (const { change } of prepared) change.check?.(problems);
    if (problems.length > 0) throw new ReloadRejected(problems);

    // The swap: no await from here to the end of the loop.
    const changes: ReloadResult['changes'] = {};
    for (const { participant, change } of prepared) changes[participant.section] = change.commit();

    for (const { participant, change } of prepared) {
      await change
        .persist?.()
        .catch((e: unknown) => this.log.warn(`${participant.section}: writing the reloaded configuration to the database failed: ${(e as Error).message}`));
    }
    return {
      reloaded: true,
      config_file: next.configFile ?? null,
      changes,
      restart_required: restartRequired,
      warnings: prepared.flatMap(({ change }) => change.warnings ?? []),
    };
  }

  private read(env: Env): AppConfig {
    try {
      return loadConfig(env);
    } catch (e) {
      if (e instanceof ConfigError) throw new ReloadRejected(e.problems);
      throw e;
    }
  }

  /** Names of the settings that differ from the boot's but take a restart to change. */
  private restartOnlyChanges(next: AppConfig): string[] {
    const out = new Set(changedKeys(RESTART_KEYS, this.boot, next));
    // A random default (no INSTANCE_ID anywhere) is not a setting: two of them are not a change.
    if (!(this.instanceIdGenerated && (configOrigin(next)?.instanceIdGenerated ?? false)) && next.instanceId !== this.boot.instanceId) out.add(INSTANCE_ID);
    // `routing.max_retries` is the same setting as MAX_REQUEUES, and wins.
    if (next.maxRequeues !== this.boot.maxRequeues) out.add(next.routing.maxRetries !== this.boot.routing.maxRetries ? MAX_RETRIES : MAX_REQUEUES);
    return [...out];
  }
}
