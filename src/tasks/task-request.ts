import { parseLineage, parseTags } from '../artifacts/parse-artifact-request';
import { Errors, GatewayError } from '../common/gateway-error';
import { MAX_TIMER_SECS } from '../common/config-reader';
import { parsePriority, Priority } from '../common/priority';

export type TaskEndpoint = '/v1/chat/completions' | '/v1/completions';
export const OUTPUT_MODES = ['text', 'json', 'edits'] as const;
export type OutputMode = (typeof OUTPUT_MODES)[number];

/** A `POST /v1/tasks` body, validated: the gateway's fields apart, the worker's request ready. */
export interface TaskRequest {
  taskId?: string;
  sessionId?: string;
  model: string;
  /** `messages` → chat completions, `prompt` → completions. */
  endpoint: TaskEndpoint;
  maxTokens: number;
  /** The client's bound on the context the task needs (prompt + output). */
  ctx?: number;
  /** Pins the task to this pool (provider), as `x-switchboard-provider` does. */
  poolId?: string;
  priority?: Priority;
  /** Recorded on the artifact only; unknown values are dropped. */
  outputMode?: OutputMode;
  budget?: { tokens?: number; timeSecs?: number };
  seed?: number;
  /** The job artifact's tags and lineage (artifact ids), validated as `POST /v1/artifacts` does. */
  tags: string[];
  parents: string[];
  /** What the worker receives: the client's fields but the gateway's, with `stream: true`. */
  workerJson: Record<string, unknown>;
  /** The client's body with the prompt redacted (for the artifact). */
  params: Record<string, unknown>;
}

/** Fields the gateway reads and never forwards. */
const GATEWAY_FIELDS = new Set(['task_id', 'session_id', 'ctx', 'pool_id', 'priority', 'output_mode', 'budget', 'tags', 'parents', 'parent']);
/** Fields that carry the prompt: never kept in an artifact. */
const PROMPT_FIELDS = ['messages', 'prompt', 'input', 'system'];
const ID = /^[A-Za-z0-9._:-]{1,128}$/;
const MAX_INT = 2_147_483_647;

type Json = Record<string, unknown>;

const bad = (param: string, message: string) => Errors.invalidParams(message, param).with({ fields: { check: 'params' } });

/** Parses and validates a raw body; every refusal names the field at fault (`param`). */
export function parseTaskRequest(raw: unknown): TaskRequest | GatewayError {
  if (typeof raw !== 'string' || raw.trim() === '') return bad('body', 'Request body must be a JSON object');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return bad('body', 'Request body is not valid JSON');
  }
  if (!isObject(parsed)) return bad('body', 'Request body must be a JSON object');
  const body = parsed;

  const taskId = optionalId(body, 'task_id');
  if (taskId instanceof GatewayError) return taskId;
  const sessionId = optionalId(body, 'session_id');
  if (sessionId instanceof GatewayError) return sessionId;
  if (typeof body.model !== 'string' || body.model.trim() === '') return bad('model', '"model" is required and must be a non-empty string');

  const hasMessages = body.messages !== undefined && body.messages !== null;
  const hasPrompt = body.prompt !== undefined && body.prompt !== null;
  if (hasMessages && hasPrompt) return bad('prompt', 'Send either "messages" (chat) or "prompt" (completion), not both');
  if (!hasMessages && !hasPrompt) return bad('messages', '"messages" (chat) or "prompt" (completion) is required');
  if (hasMessages) {
    if (!Array.isArray(body.messages) || body.messages.length === 0) return bad('messages', '"messages" must be a non-empty array of messages');
    const at = body.messages.findIndex((m) => !isObject(m) || typeof m.role !== 'string');
    if (at >= 0) return bad(`messages[${at}]`, `"messages[${at}]" must be an object with a string "role"`);
  } else if (!isPrompt(body.prompt)) return bad('prompt', '"prompt" must be a non-empty string or a list of strings');

  const maxTokens = integer(body, 'max_tokens', true);
  if (maxTokens instanceof GatewayError) return maxTokens;
  const ctx = integer(body, 'ctx', false);
  if (ctx instanceof GatewayError) return ctx;
  let poolId: string | undefined;
  if (body.pool_id !== undefined && body.pool_id !== null) {
    if (typeof body.pool_id !== 'string' || body.pool_id.trim() === '' || body.pool_id.length > 64)
      return bad('pool_id', '"pool_id" must be a pool name (1-64 characters)');
    poolId = body.pool_id.trim();
  }
  let priority: Priority | undefined;
  if (body.priority !== undefined && body.priority !== null) {
    priority = parsePriority(body.priority);
    if (!priority) return bad('priority', '"priority" must be high, normal or low');
  }
  const budget = parseBudget(body.budget);
  if (budget instanceof GatewayError) return budget;
  const tags = parseTags(body.tags);
  if (tags instanceof GatewayError) return tags.with({ fields: { check: 'params' } });
  const parents = parseLineage(body);
  if (parents instanceof GatewayError) return parents.with({ fields: { check: 'params' } });

  const workerJson: Json = {};
  for (const [key, value] of Object.entries(body)) if (!GATEWAY_FIELDS.has(key)) workerJson[key] = value;
  workerJson.stream = true;
  const params: Json = { ...body };
  for (const key of PROMPT_FIELDS) if (key in params) params[key] = '[redacted]';
  return {
    taskId,
    sessionId,
    model: body.model,
    endpoint: hasMessages ? '/v1/chat/completions' : '/v1/completions',
    maxTokens: maxTokens!,
    ctx,
    poolId,
    priority,
    outputMode: (OUTPUT_MODES as readonly unknown[]).includes(body.output_mode) ? (body.output_mode as OutputMode) : undefined,
    budget,
    seed: typeof body.seed === 'number' && Number.isFinite(body.seed) ? body.seed : undefined,
    tags,
    parents,
    workerJson,
    params,
  };
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isPrompt(v: unknown): boolean {
  if (typeof v === 'string') return v.length > 0;
  return Array.isArray(v) && v.length > 0 && v.every((p) => typeof p === 'string');
}

function optionalId(body: Json, field: string): string | undefined | GatewayError {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !ID.test(v)) return bad(field, `"${field}" must be 1-128 characters of A-Z a-z 0-9 . _ : -`);
  return v;
}

function integer(body: Json, field: string, required: boolean): number | undefined | GatewayError {
  const v = body[field];
  if (v === undefined || v === null) return required ? bad(field, `"${field}" is required (a positive integer)`) : undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_INT) return bad(field, `"${field}" must be a positive integer`);
  return v;
}

function parseBudget(v: unknown): TaskRequest['budget'] | GatewayError {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) return bad('budget', '"budget" must be an object {tokens?, time_secs?}');
  const out: NonNullable<TaskRequest['budget']> = {};
  if (v.tokens !== undefined && v.tokens !== null) {
    if (typeof v.tokens !== 'number' || !Number.isInteger(v.tokens) || v.tokens < 1) return bad('budget.tokens', '"budget.tokens" must be a positive integer');
    out.tokens = v.tokens;
  }
  if (v.time_secs !== undefined && v.time_secs !== null) {
    if (typeof v.time_secs !== 'number' || !(v.time_secs > 0) || v.time_secs > MAX_TIMER_SECS) {
      return bad('budget.time_secs', `"budget.time_secs" must be a number of seconds above 0 (at most ${MAX_TIMER_SECS})`);
    }
    out.timeSecs = v.time_secs;
  }
  return out;
}
