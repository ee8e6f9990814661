import {
  CACHE_FLUSH_SCOPES,
  CacheFlushScope,
  LIFECYCLE_STATUSES,
  LifecycleStatus,
  LifecycleStatusMessage,
  CANCEL_REASONS,
  CancelReason,
  EXTENDED_CANCEL_REASONS,
  ModelCapabilities,
  ResponseCompleteMessage,
  RunnerInfo,
  ServerToWorkerMessage,
  WorkerToServerMessage,
} from './messages';
import { CapabilityBounds, readCapabilities } from './capabilities';
import { optCacheStats } from './cache-stats-codec';
import { readChunkFrame } from './chunk-frame';
import { clampInt, clampNumber, MAX_DOCUMENT_DEPTH, nestedDeeperThan, optGpuTime, optTokenCounts, WorkerNumberBounds as B } from './number-bounds';

/**
 * A frame that is well-formed JSON of a known type but carries values the receiver cannot use
 * (a lifecycle report with `progress` 7): it is logged and dropped, the session goes on.
 */
export class DroppedFrame extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DroppedFrame';
  }
}

/** A frame that does not follow the wire format. */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

type Json = Record<string, unknown>;

function fail(type: string, field: string, expected: string): never {
  throw new ProtocolError(`${type}.${field}: expected ${expected}`);
}

function str(o: Json, type: string, field: string): string {
  const v = o[field];
  if (typeof v !== 'string') fail(type, field, 'string');
  return v;
}

function optStr(o: Json, type: string, field: string): string | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') fail(type, field, 'string');
  return v;
}

function uint(o: Json, type: string, field: string): number {
  const v = o[field];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) fail(type, field, 'non-negative integer');
  return v;
}

function optUint(o: Json, type: string, field: string): number | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  return uint(o, type, field);
}

/**
 * A count the worker must send (load, capacity): any JSON number is clamped into [0, max] and
 * rounded up (see number-bounds.ts); only a value that is not a number is a protocol error.
 */
function count(o: Json, type: string, field: string, max: number): number {
  const v = clampInt(o[field], 0, max);
  if (v === undefined) fail(type, field, 'number');
  return v;
}

function optCount(o: Json, type: string, field: string, max: number): number | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  return count(o, type, field, max);
}

function bool(o: Json, type: string, field: string): boolean {
  const v = o[field];
  if (typeof v !== 'boolean') fail(type, field, 'boolean');
  return v;
}

function strArray(o: Json, type: string, field: string): string[] {
  const v = o[field];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) fail(type, field, 'array of strings');
  return v as string[];
}

function optStrArray(o: Json, type: string, field: string): string[] | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  return strArray(o, type, field);
}

function optStrMap(o: Json, type: string, field: string): Record<string, string> | undefined {
  const v = o[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) fail(type, field, 'object of strings');
  // Fresh from JSON.parse (own data properties only): checked in place, not copied, per response.
  const map = v as Json;
  for (const k of Object.keys(map)) if (typeof map[k] !== 'string') fail(type, `${field}.${k}`, 'string');
  return map as Record<string, string>;
}

/** A worker's capability hints (docs/protocol.md#numbers): a context_length below 1 says nothing. */
const CAPABILITY_HINTS: CapabilityBounds = { contextLength: B.contextLength, numbers: 'hint' };

/**
 * Capabilities are a hint: malformed entries are ignored rather than rejected. A `__proto__` entry
 * (an own key after JSON.parse) is skipped: assigned, it would set the map's prototype, through which
 * lookups by model name would then find declarations that are not the map's own.
 */
function optCapabilities(o: Json): Record<string, ModelCapabilities> | undefined {
  const v = o.capabilities;
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const out: Record<string, ModelCapabilities> = {};
  for (const [model, raw] of Object.entries(v as Json)) {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw) || model === '__proto__') continue;
    out[model] = readCapabilities(raw, CAPABILITY_HINTS);
  }
  return out;
}

/** Endpoint paths are a hint like capabilities: anything but a list of `/…` strings is ignored. */
function optEndpoints(o: Json): string[] | undefined {
  const v = o.endpoints;
  if (!Array.isArray(v)) return undefined;
  return v.filter((e): e is string => typeof e === 'string' && e.startsWith('/') && e.length <= 256).slice(0, 64);
}

/** A priority hint: a non-negative integer (at most WorkerNumberBounds.priority), otherwise ignored. */
function optPriority(o: Json): number | undefined {
  const v = o.priority;
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? Math.min(v, B.priority) : undefined;
}

const RUNNER_STRING_MAX = 64;

/** Informational like the other hints: anything but {type: string, version?: string} within bounds is dropped. */
function optRunner(o: Json): RunnerInfo | undefined {
  const v = o.runner;
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const { type, version } = v as Json;
  if (typeof type !== 'string' || type.length === 0 || type.length > RUNNER_STRING_MAX) return undefined;
  const runner: RunnerInfo = { type };
  if (typeof version === 'string' && version.length > 0 && version.length <= RUNNER_STRING_MAX) runner.version = version;
  return runner;
}

/** A relayed JSON document: an object of bounded size and depth, anything else ignored. */
function optDocument(o: Json, field: string): Record<string, unknown> | undefined {
  const v = o[field];
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  // Serialising (here and when it is shown) recurses once per level: a deep one would overflow the stack.
  if (nestedDeeperThan(v, MAX_DOCUMENT_DEPTH)) return undefined;
  return JSON.stringify(v).length <= 64 * 1024 ? (v as Record<string, unknown>) : undefined;
}

/** Feature names a worker asks for: a list of short strings; anything else is ignored. */
function optFeatures(o: Json): string[] | undefined {
  const v = o.features;
  if (!Array.isArray(v)) return undefined;
  return v.filter((f): f is string => typeof f === 'string' && f.length <= 64).slice(0, 32);
}

function parseObject(text: string): Json {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ProtocolError('frame is not valid JSON');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new ProtocolError('frame is not a JSON object');
  }
  if (typeof (value as Json).type !== 'string') throw new ProtocolError('frame has no string "type"');
  return value as Json;
}

/** Parses and validates one worker → server frame. Unknown extra fields are ignored. */
export function parseWorkerMessage(text: string): WorkerToServerMessage {
  const chunk = readChunkFrame(text); // the common frame of a stream, without building the whole object
  if (chunk !== undefined) return chunk;
  const o = parseObject(text);
  const type = o.type as string;
  switch (type) {
    case 'register':
      return {
        type,
        worker_name: str(o, type, 'worker_name'),
        models: strArray(o, type, 'models'),
        max_concurrent: count(o, type, 'max_concurrent', B.maxConcurrent),
        protocol_version: optStr(o, type, 'protocol_version'),
        current_load: optCount(o, type, 'current_load', B.load),
        capabilities: optCapabilities(o),
        endpoints: optEndpoints(o),
        priority: optPriority(o),
        runner: optRunner(o),
        features: optFeatures(o),
        runner_capabilities: optDocument(o, 'runner_capabilities'),
      };
    case 'models_update':
      return {
        type,
        models: strArray(o, type, 'models'),
        current_load: optCount(o, type, 'current_load', B.load),
        capabilities: optCapabilities(o),
        endpoints: optEndpoints(o),
        priority: optPriority(o),
      };
    case 'response_chunk':
      return { type, request_id: str(o, type, 'request_id'), chunk: str(o, type, 'chunk') };
    case 'response_complete': {
      const status = uint(o, type, 'status_code');
      if (status < 100 || status > 599) fail(type, 'status_code', 'HTTP status 100-599');
      const message: ResponseCompleteMessage = {
        type,
        request_id: str(o, type, 'request_id'),
        status_code: status,
        headers: optStrMap(o, type, 'headers'),
        body: optStr(o, type, 'body'),
        token_counts: optTokenCounts(o),
      };
      const gpuTime = optGpuTime(o); // absent stays absent (set, not spread in: no object per response)
      if (gpuTime !== undefined) message.gpu_time_ms = gpuTime;
      return message;
    }
    case 'response_start': {
      const status = uint(o, type, 'status_code');
      if (status < 100 || status > 599) fail(type, 'status_code', 'HTTP status 100-599');
      return { type, request_id: str(o, type, 'request_id'), status_code: status, headers: optStrMap(o, type, 'headers') };
    }
    case 'pong':
      return {
        type,
        current_load: count(o, type, 'current_load', B.load),
        // Informational (the gateway does not use it): a wrong type is ignored, not a protocol error.
        timestamp_unix_ms: clampInt(o.timestamp_unix_ms, 0, B.epochMs),
        cache_stats: optCacheStats(o.cache_stats),
      };
    case 'error':
      return {
        type,
        request_id: optStr(o, type, 'request_id'),
        // Logged and counted: bounded so one frame cannot write megabytes into the log.
        code: str(o, type, 'code').slice(0, ERROR_CODE_MAX),
        message: str(o, type, 'message').slice(0, ERROR_MESSAGE_MAX),
      };
    case 'lifecycle_status':
      return parseLifecycleStatus(o);
    case 'runner_capabilities':
      return { type, runner_capabilities: optDocument(o, type) ?? fail(type, type, 'a JSON object of at most 64 KiB and 32 levels') };
    default:
      throw new ProtocolError(`unknown message type "${type}"`);
  }
}

const ERROR_CODE_MAX = 128;
const ERROR_MESSAGE_MAX = 1024;
/** Each figure and its upper bound (a larger value is lowered to it). */
const LIFECYCLE_FIGURES = {
  eta_secs: B.etaSecs,
  gpu_memory_used_mb: B.megabytes,
  gpu_memory_freed_mb: B.megabytes,
  entries_removed: B.entries,
  memory_freed_mb: B.megabytes,
} as const;
const LIFECYCLE_ERROR_MAX = 1024;

/** A worker's lifecycle report; nonsense in it drops the frame (`DroppedFrame`), never the session. */
function parseLifecycleStatus(o: Json): LifecycleStatusMessage {
  const drop = (why: string): never => {
    throw new DroppedFrame(`lifecycle_status${typeof o.task_id === 'string' ? ` for task ${o.task_id.slice(0, 128)}` : ''}: ${why}`);
  };
  if (typeof o.task_id !== 'string' || o.task_id.length === 0 || o.task_id.length > 128) drop('task_id: expected a string of 1-128 characters');
  if (!(LIFECYCLE_STATUSES as readonly unknown[]).includes(o.status)) drop(`status: expected one of ${LIFECYCLE_STATUSES.join(', ')}`);
  const message: LifecycleStatusMessage = { type: 'lifecycle_status', task_id: o.task_id as string, status: o.status as LifecycleStatus };
  if (o.progress !== undefined && o.progress !== null) {
    if (typeof o.progress !== 'number' || !(o.progress >= 0 && o.progress <= 1)) drop('progress: expected a number from 0 to 1');
    message.progress = o.progress as number;
  }
  for (const [field, max] of Object.entries(LIFECYCLE_FIGURES) as Array<[keyof typeof LIFECYCLE_FIGURES, number]>) {
    const v = o[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || Number.isNaN(v) || v < 0) drop(`${field}: expected a non-negative number`);
    message[field] = clampNumber(v, 0, max) as number;
  }
  if (o.error !== undefined && o.error !== null) {
    if (typeof o.error !== 'string') drop('error: expected a string');
    message.error = (o.error as string).slice(0, LIFECYCLE_ERROR_MAX);
  }
  return message;
}

/** Parses and validates one server → worker frame (used by the worker daemon). */
export function parseServerMessage(text: string): ServerToWorkerMessage {
  const o = parseObject(text);
  const type = o.type as string;
  switch (type) {
    case 'register_ack':
      return {
        type,
        worker_id: str(o, type, 'worker_id'),
        models: strArray(o, type, 'models'),
        warnings: optStrArray(o, type, 'warnings'),
        protocol_version: optStr(o, type, 'protocol_version'),
        features: optStrArray(o, type, 'features'),
      };
    case 'request':
      return {
        type,
        request_id: str(o, type, 'request_id'),
        model: str(o, type, 'model'),
        endpoint_path: str(o, type, 'endpoint_path'),
        is_streaming: bool(o, type, 'is_streaming'),
        body: str(o, type, 'body'),
        headers: optStrMap(o, type, 'headers'),
      };
    case 'cancel': {
      const reason = str(o, type, 'reason');
      if (![...CANCEL_REASONS, ...EXTENDED_CANCEL_REASONS].includes(reason as CancelReason)) fail(type, 'reason', 'a cancel reason');
      return { type, request_id: str(o, type, 'request_id'), reason: reason as CancelReason };
    }
    case 'ping':
      return { type, timestamp_unix_ms: optUint(o, type, 'timestamp_unix_ms') };
    case 'graceful_shutdown':
      return {
        type,
        reason: optStr(o, type, 'reason'),
        drain_timeout_secs: optUint(o, type, 'drain_timeout_secs'),
      };
    case 'models_refresh':
      return { type, reason: optStr(o, type, 'reason') };
    case 'model_load':
      return {
        type,
        task_id: str(o, type, 'task_id'),
        model_id: str(o, type, 'model_id'),
        quantization: optStr(o, type, 'quantization'),
        max_context_length: optUint(o, type, 'max_context_length'),
        gpu_memory_budget_mb: optUint(o, type, 'gpu_memory_budget_mb'),
        evict_model: optStr(o, type, 'evict_model'),
        verified_op_token: optStr(o, type, 'verified_op_token'),
      };
    case 'model_unload':
      return {
        type,
        task_id: str(o, type, 'task_id'),
        model_id: str(o, type, 'model_id'),
        verified_op_token: optStr(o, type, 'verified_op_token'),
      };
    case 'cache_flush': {
      const scope = str(o, type, 'scope');
      if (!(CACHE_FLUSH_SCOPES as readonly string[]).includes(scope)) fail(type, 'scope', `one of ${CACHE_FLUSH_SCOPES.join(', ')}`);
      return {
        type,
        task_id: str(o, type, 'task_id'),
        scope: scope as CacheFlushScope,
        model_id: optStr(o, type, 'model_id'),
        tenant_id: optStr(o, type, 'tenant_id'),
        tag: optStr(o, type, 'tag'),
        verified_op_token: optStr(o, type, 'verified_op_token'),
      };
    }
    default:
      throw new ProtocolError(`unknown message type "${type}"`);
  }
}

/**
 * Serializes a frame. Optional fields left `undefined` are dropped by JSON.stringify;
 * empty `headers`/`warnings` must be left undefined by the caller (see builders).
 */
export function encodeMessage(message: ServerToWorkerMessage | WorkerToServerMessage): string {
  return JSON.stringify(message);
}
