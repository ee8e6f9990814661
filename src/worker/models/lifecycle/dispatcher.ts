import { LifecycleCommandMessage, LifecycleStatusMessage } from '../../../protocol';
import { Clock, daemonClock } from '../../clock';
import { lifecycleArgsProblem } from '../../guard/lifecycle-args';
import { Logger } from '../../logger';
import { LifecycleHttp } from './backend-http';
import { ProgressThrottle } from './progress';
import { Figures, LifecycleAdapter, OperationContext, OperationFailed, Unsupported } from './types';

/** The gateway link a command came in on. */
export interface LifecycleLink {
  /** Sends a status frame to that gateway (a no-op once the link is gone). */
  send(message: LifecycleStatusMessage): void;
  /** Aborted when that link drops or the daemon stops: nobody could receive the outcome. */
  readonly signal: AbortSignal;
  /** After a completed load or unload: re-read the backend's models and send `models_update`. */
  modelsChanged(): Promise<void>;
}

export interface DispatcherOptions {
  log: Logger;
  http: LifecycleHttp;
  /** The adapter for the backend as it is known now (the probe may learn more after start). */
  adapter: () => LifecycleAdapter;
  /** Deadline of one whole operation. */
  timeoutMs: number;
  /** Pause between two polls of the backend. */
  pollMs: number;
  /** At most one `loading` report per this interval. */
  progressIntervalMs: number;
  /** Polling pauses, progress throttling and durations. Default: the daemon's real clock. */
  clock?: Clock;
}

const OPERATIONS = { model_load: 'load', model_unload: 'unload', cache_flush: 'flush' } as const;
const ERROR_MAX = 500;

/**
 * Runs the gateway's lifecycle commands against the backend, each on its own (a load that takes
 * an hour never holds up request relaying), one at a time per model: `accepted` at once, throttled
 * `loading` reports while it runs, then `completed` (after the models were re-read and sent, for
 * a load or unload), `failed` or `unsupported`.
 */
export class LifecycleDispatcher {
  /** Lock key (a model, or the cache) → the task holding it. */
  private readonly busy = new Map<string, string>();
  private readonly tasks = new Set<string>();

  constructor(private readonly options: DispatcherOptions) {}

  /** Resolves when the operation has ended and its outcome was sent. Never rejects. */
  handle(command: LifecycleCommandMessage, link: LifecycleLink): Promise<void> {
    const taskId = command.task_id;
    const refuse = (error: string) => {
      this.options.log.warn('lifecycle operation refused', { task_id: taskId, operation: OPERATIONS[command.type], error });
      link.send({ type: 'lifecycle_status', task_id: taskId, status: 'failed', error });
      return Promise.resolve();
    };
    const invalid = problemWith(command);
    if (invalid) return refuse(invalid);
    if (this.tasks.has(taskId)) {
      // A status for this task id would be taken as the running operation's outcome: the running
      // operation answers for it.
      this.options.log.warn('lifecycle command for a task already running on this worker; ignored', { task_id: taskId, operation: OPERATIONS[command.type] });
      return Promise.resolve();
    }
    const keys = lockKeys(command);
    for (const key of keys) {
      const holder = this.busy.get(key);
      if (holder !== undefined) {
        const what = key === CACHE_KEY ? 'the cache' : `model "${key.slice(MODEL_KEY.length)}"`;
        return refuse(`another lifecycle operation (task ${holder}) is already running for ${what} on this worker; retry when it has finished`);
      }
    }
    this.tasks.add(taskId);
    for (const key of keys) this.busy.set(key, taskId);
    link.send({ type: 'lifecycle_status', task_id: taskId, status: 'accepted' });
    return this.run(command, link)
      .catch((err: unknown) => {
        // run() reports every failure of the operation itself; this is a bug around it, and must
        // neither leave the gateway waiting nor become an unhandled rejection that ends the daemon.
        const message = `internal error: ${(err as Error)?.message ?? String(err)}`;
        const error = (command.verified_op_token ? message.split(command.verified_op_token).join('[redacted]') : message).slice(0, ERROR_MAX);
        this.options.log.error('lifecycle operation crashed', { task_id: taskId, operation: OPERATIONS[command.type], error });
        link.send({ type: 'lifecycle_status', task_id: taskId, status: 'failed', error });
      })
      .finally(() => {
        this.tasks.delete(taskId);
        for (const key of keys) if (this.busy.get(key) === taskId) this.busy.delete(key);
      });
  }

  private async run(command: LifecycleCommandMessage, link: LifecycleLink): Promise<void> {
    const { log, timeoutMs, pollMs, progressIntervalMs, http } = this.options;
    const clock = this.options.clock ?? daemonClock;
    const taskId = command.task_id;
    const operation = OPERATIONS[command.type];
    const startedAt = clock.now();
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([link.signal, deadline]);
    const throttle = new ProgressThrottle(
      ({ progress, etaSecs }) => link.send({ type: 'lifecycle_status', task_id: taskId, status: 'loading', progress, eta_secs: etaSecs }),
      progressIntervalMs,
      clock,
    );
    const ctx: OperationContext = {
      signal,
      http,
      progress: (fraction, eta) => throttle.report(fraction, eta),
      pause: () => pause(clock, pollMs, signal),
    };
    let adapter: LifecycleAdapter | undefined;
    const finish = (message: Omit<LifecycleStatusMessage, 'type' | 'task_id'>) => {
      throttle.close();
      link.send({ type: 'lifecycle_status', task_id: taskId, ...message });
      const fields = { task_id: taskId, operation, runner: adapter?.runner, duration_ms: clock.now() - startedAt, ...message };
      if (message.status === 'completed') log.info('lifecycle operation finished', fields);
      else log.warn('lifecycle operation finished', fields);
    };
    try {
      adapter = this.options.adapter();
      log.info('lifecycle operation started', {
        task_id: taskId,
        operation,
        runner: adapter.runner,
        model_id: command.model_id,
        evict_model: command.type === 'model_load' ? command.evict_model : undefined,
        scope: command.type === 'cache_flush' ? command.scope : undefined,
      });
      const figures: Figures = await (command.type === 'model_load'
        ? adapter.load(command, ctx)
        : command.type === 'model_unload'
          ? adapter.unload(command, ctx)
          : adapter.flush(command, ctx));
      throttle.close();
      if (command.type !== 'cache_flush') {
        try {
          await link.modelsChanged();
        } catch (err) {
          log.warn('could not re-read the backend models after a lifecycle operation', { task_id: taskId, error: (err as Error).message });
        }
      }
      finish({ status: 'completed', ...figures });
    } catch (err) {
      const token = command.verified_op_token;
      const text = (message: string) => {
        const clean = token ? message.split(token).join('[redacted]') : message;
        return clean.length > ERROR_MAX ? `${clean.slice(0, ERROR_MAX)}…` : clean;
      };
      if (link.signal.aborted) {
        finish({ status: 'failed', error: 'interrupted: the worker lost its gateway link or is stopping' });
      } else if (deadline.aborted) {
        finish({ status: 'failed', error: `timed out after ${timeoutMs / 1000} s (--lifecycle-timeout)` });
      } else if (err instanceof Unsupported) {
        finish({ status: 'unsupported', error: text(err.message) });
      } else if (err instanceof OperationFailed) {
        finish({ status: 'failed', error: text(err.message) });
      } else {
        // A network failure reaches here as the client's own error; anything else is a bug.
        finish({ status: 'failed', error: text((err as Error)?.message ?? String(err)) });
      }
    }
  }
}

const MODEL_KEY = 'model:';
const CACHE_KEY = 'cache';

function lockKeys(command: LifecycleCommandMessage): string[] {
  switch (command.type) {
    case 'model_load':
      return [MODEL_KEY + command.model_id, ...(command.evict_model ? [MODEL_KEY + command.evict_model] : [])];
    case 'model_unload':
      return [MODEL_KEY + command.model_id];
    case 'cache_flush':
      return [CACHE_KEY, ...(command.scope === 'model' && command.model_id ? [MODEL_KEY + command.model_id] : [])];
  }
}

/** What makes a command impossible to carry out, before anything is asked of the backend. */
function problemWith(command: LifecycleCommandMessage): string | undefined {
  if (command.type !== 'cache_flush' && command.model_id.trim() === '') return 'model_id is empty';
  // The gateway's arguments reach backend URLs, file names and registries: no path syntax there.
  const args = lifecycleArgsProblem(command);
  if (args) return args;
  if (command.type === 'model_load' && command.evict_model === command.model_id) return 'evict_model names the model to load';
  if (command.type === 'cache_flush') {
    const needs = { all: undefined, model: 'model_id', tenant: 'tenant_id', tag: 'tag' } as const;
    const field = needs[command.scope];
    if (field && !command[field]) return `cache_flush with scope "${command.scope}" needs ${field}`;
  }
  return undefined;
}

function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new Error('aborted'));
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(timer);
      reject(new Error('aborted'));
    };
    const timer = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
