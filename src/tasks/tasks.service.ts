import { Inject, Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { randomUUID } from 'node:crypto';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Errors, GatewayError, statusOf } from '../common/gateway-error';
import { Dispatcher } from '../dispatch/dispatcher.service';
import { RelayRequest } from '../dispatch/relay-request';
import { errorBody, errorHeaders } from '../common/error-dialect';
import { CORRELATION_HEADER } from '../observability/correlation-id';
import { forwardableHeaders } from '../protocol';
import { extractRequirements } from '../routing/requirements';
import { ClientIdentity, resolvePriority, TENANT_HEADER } from '../tenancy/client-identity';
import { LimitVerdict, TenantLimits } from '../tenancy/tenant-limits.service';
import { TenantsService } from '../tenancy/tenants.service';
import { budgetLimits, BudgetLimits, SessionBudgetStore, sessionKey } from './session-budgets';
import { Task, TaskReader } from './task';
import { admissionError } from './task-admission';
import { Membership } from '../cluster/membership.port';
import { liveHolder } from './task-holder';
import { TaskLocator } from './task-locator';
import { parseTaskRequest, TaskRequest } from './task-request';
import { TaskRuntime } from './task-runtime';
import { TaskSink } from './task-sink';
import { taskUrls, taskView, TaskView } from './task-view';

/** Who submits or reads a task, as the controller identified them. */
export interface TaskCaller {
  identity: ClientIdentity;
  /** The request's headers (a gateway API key already taken out): forwarded to the worker as for inference. */
  headers: IncomingHttpHeaders;
  correlationId: string;
}

/** The answer to `POST /v1/tasks`: 202 with the task's place in line, or the refusal. */
export interface SubmitAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  /** For the access log. */
  task?: Task;
}

export const BUDGET_REMAINING_HEADER = 'x-budget-remaining-tokens';
/** Never forwarded: the pin of a task is its `pool_id`. */
const PIN_HEADER = 'x-switchboard-provider';

/**
 * The task API: admission (every check before the task may queue), then the task's request goes
 * to the dispatcher like a streaming completion; status, cancel and streams read the runtime.
 */
@Injectable()
export class TasksService {
  /** Ids being admitted (limits may answer over the network): a second submit with one is a 409. */
  private readonly admitting = new Set<string>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly dispatcher: Dispatcher,
    private readonly tenants: TenantsService,
    private readonly limits: TenantLimits,
    private readonly runtime: TaskRuntime,
    private readonly locator: TaskLocator,
    private readonly budgets: SessionBudgetStore,
    private readonly membership: Membership,
  ) {}

  submit(caller: TaskCaller, rawBody: unknown): SubmitAnswer | Promise<SubmitAnswer> {
    const req = parseTaskRequest(rawBody);
    if (req instanceof GatewayError) return refusal(req);
    const { identity } = caller;
    const id = req.taskId ?? `t-${randomUUID()}`;
    const reservation = `${identity.tenant}\u0000${id}`;
    if (this.runtime.find(identity.tenant, id) || this.admitting.has(reservation)) return conflict(id);
    if (!this.locator.enabled) return this.submitParsed(caller, req, id, reservation);
    // Cluster mode: the id is claimed in Redis (another replica may hold a task with it) and the
    // session's totals are brought up to date, both bounded by CLUSTER_REDIS_TIMEOUT_MS.
    this.admitting.add(reservation);
    const c = this.config.tasks;
    // A record naming a replica that is gone is taken over (never while this replica's own view of the members is degraded).
    const isLive = (holder: string) => this.membership.degraded() || liveHolder(this.membership, holder) !== undefined;
    const claimed = this.locator.claim(identity.tenant, id, c.queueTimeoutMs + c.maxRunMs + c.retentionMs, isLive);
    const fresh = this.budgets.refresh(sessionKey(identity.tenant, req.sessionId, id), this.clock.now());
    return Promise.all([claimed, fresh]).then(async ([claim]) => {
      this.admitting.delete(reservation);
      if (claim === 'taken') return conflict(id);
      const answer = await this.submitParsed(caller, req, id, reservation);
      if (answer.status !== 202 && claim === 'claimed') await this.locator.release(identity.tenant, id);
      return answer;
    });
  }

  private submitParsed(caller: TaskCaller, req: TaskRequest, id: string, reservation: string): SubmitAnswer | Promise<SubmitAnswer> {
    const { identity } = caller;
    const settings = this.tenants.settingsOf(identity.tenant);
    const endpointRequirements = extractRequirements(req.endpoint, req.workerJson);
    const promptTokens = endpointRequirements.estimatedTokens;
    const needed = promptTokens + req.maxTokens;
    const limits = budgetLimits(req.budget, settings);
    const budgetKey = sessionKey(identity.tenant, req.sessionId, id);
    const now = this.clock.now();
    const used = this.runtime.sessionUsage(budgetKey, now);
    const budgetHeaders: Record<string, string> =
      limits.tokens !== undefined ? { [BUDGET_REMAINING_HEADER]: String(Math.max(0, limits.tokens - used.tokens)) } : {};

    let priority = identity.priority;
    if (req.priority) {
      const p = resolvePriority(req.priority, undefined, settings.maxPriority);
      if (!(p instanceof GatewayError)) priority = p;
    }
    const task = new Task({
      id,
      tenant: identity.tenant,
      request: req,
      budgetKey,
      limits,
      promptTokens,
      correlationId: caller.correlationId,
      createdAt: now,
      maxEvents: this.config.tasks.maxEvents,
      maxBytes: this.config.tasks.maxBytes,
    });
    const relay = new RelayRequest({
      id: `r-${randomUUID()}`,
      model: req.model,
      endpointPath: req.endpoint,
      isStreaming: true,
      body: JSON.stringify(req.workerJson),
      maxTokens: req.maxTokens,
      arrivedAt: now,
      headers: this.workerHeaders(caller),
      correlationId: caller.correlationId,
      tenant: identity.tenant,
      keyId: identity.keyId,
      priority,
      maxQueued: settings.maxQueued,
      // A key's or tenant's max_concurrent holds for its tasks too: a batch of tasks waits its turn.
      caps: this.dispatcher.caps.capsFor(identity.tenant, settings.maxConcurrent, identity.keyId, identity.keyMaxConcurrent),
      sink: new TaskSink(task, this.runtime),
      route: {
        model: req.model,
        // The router keeps only workers whose context holds the whole task (or the client's ctx).
        requirements: { ...endpointRequirements, estimatedTokens: req.ctx ?? needed },
        pin: req.poolId,
        allowedModels: identity.allowedModels,
        allowedPools: identity.allowedPools,
      },
      onTokens: (tokens) => this.limits.chargeTokens(identity, tokens, relay.worker),
      // A task may wait and run far longer than an interactive request (its pool's timeouts).
      timeouts: { queueMs: this.config.tasks.queueTimeoutMs, runMs: this.config.tasks.maxRunMs },
    });
    task.relay = relay;

    // The task's own checks come first: a task they refuse costs none of the tenant's request rate.
    const refused =
      req.ctx !== undefined && needed > req.ctx
        ? Errors.contextExceeded({ promptTokens, maxTokens: req.maxTokens, ctx: req.ctx, model: req.model })
        : this.checkBudget(limits, used, needed);
    if (refused) return this.admit(task, relay, promptTokens, budgetHeaders, refused);
    this.admitting.add(reservation);
    const verdict = this.limits.admit(identity);
    const decide = (v: LimitVerdict): SubmitAnswer => {
      this.admitting.delete(reservation);
      return this.admit(task, relay, promptTokens, { ...v.headers, ...budgetHeaders }, v.error);
    };
    return verdict instanceof Promise ? verdict.then(decide) : decide(verdict);
  }

  /** The session's token and time budget against what the task may need. */
  private checkBudget(limits: BudgetLimits, used: { tokens: number; timeMs: number }, needed: number): GatewayError | undefined {
    if (limits.tokens !== undefined && used.tokens + needed > limits.tokens) {
      return Errors.sessionBudgetExceeded({ budget: 'tokens', limit: limits.tokens, used: used.tokens, requested: needed });
    }
    if (limits.timeMs !== undefined && used.timeMs >= limits.timeMs) {
      return Errors.sessionBudgetExceeded({ budget: 'time', limit: limits.timeMs, used: used.timeMs });
    }
    return undefined;
  }

  /** Hands the task's request to the dispatcher; a refusal there (routing, queue bound) is the answer. */
  private admit(task: Task, relay: RelayRequest, promptTokens: number, headers: Record<string, string>, limitError: GatewayError | undefined): SubmitAnswer {
    task.admitting = true;
    if (limitError) this.dispatcher.reject(relay, limitError);
    else this.dispatcher.submit(relay);
    task.admitting = false;
    if (task.admissionError) return refusal(admissionError(task.admissionError, task.request, promptTokens), headers);
    this.runtime.register(task, relay);
    const urls = taskUrls(task.id);
    return {
      status: 202,
      headers: { ...headers, location: urls.status_url },
      body: { task_id: task.id, queue_position: Math.max(0, task.queuePosition), predicted_start_ms: task.predictedStartMs, ...urls },
      task,
    };
  }

  private workerHeaders(caller: TaskCaller): Record<string, string> {
    const headers = forwardableHeaders(caller.headers) ?? {};
    // The body is the gateway's JSON, never compressed; the pin is `pool_id`.
    delete headers['accept-encoding'];
    delete headers['content-encoding'];
    delete headers['last-event-id'];
    delete headers[PIN_HEADER];
    headers['content-type'] = 'application/json';
    headers[CORRELATION_HEADER] = caller.correlationId;
    headers[TENANT_HEADER] = caller.identity.tenant;
    return headers;
  }

  // ---------------------------------------------------------------- reading and cancelling

  /** The caller's task (another tenant's is as unknown as a missing one). */
  find(identity: ClientIdentity, id: string): Task | GatewayError {
    return this.runtime.find(identity.tenant, id) ?? Errors.notFound('Task', id);
  }

  status(identity: ClientIdentity, id: string): TaskView | GatewayError {
    const task = this.find(identity, id);
    return task instanceof GatewayError ? task : taskView(task, this.clock.now());
  }

  /** Race-free: once this returns, no stream of the task receives another token. */
  cancel(identity: ClientIdentity, id: string): TaskView | GatewayError {
    const task = this.find(identity, id);
    if (task instanceof GatewayError) return task;
    this.runtime.cancel(task);
    return taskView(task, this.clock.now());
  }

  /**
   * Whether another stream may open: an unfinished task takes at most `tasks.max_readers` (each
   * open stream costs a write for every chunk of its worker, on the path every request shares).
   */
  mayOpenStream(task: Task): GatewayError | undefined {
    const max = this.config.tasks.maxReaders;
    if (task.finished || task.readers.size < max) return undefined;
    return Errors.conflict(`Task '${task.id}' already has ${max} open streams (tasks.max_readers): close one, or read its events later with Last-Event-ID`);
  }

  /** A reader from event `afterId` on (0 = from the start). */
  attach(task: Task, reader: TaskReader, afterId: number): void {
    task.attach(reader, afterId);
  }
}

function conflict(id: string): SubmitAnswer {
  return refusal(Errors.conflict(`Task '${id}' already exists`).with({ fields: { check: 'task_id' } }));
}

function refusal(error: GatewayError, headers: Record<string, string> = {}): SubmitAnswer {
  return { status: statusOf(error.code), headers: { ...headers, ...errorHeaders(error) }, body: errorBody('openai', error) };
}
