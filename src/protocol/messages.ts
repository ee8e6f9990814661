/**
 * Worker wire protocol `2026-04-bridge-v1` (see docs/protocol.md).
 * Field names are snake_case on the wire because deployed workers depend on them.
 * Optional fields are omitted when absent, never sent as null.
 */

export const PROTOCOL_VERSION = '2026-04-bridge-v1';

export const CANCEL_REASONS = ['client_disconnect', 'timeout', 'graceful_shutdown', 'worker_disconnect', 'requeue_exhausted', 'server_shutdown'] as const;
/**
 * Cancel reasons only sent to workers that negotiated the `cancel_reasons` feature: the deployed
 * ModelRelay daemon drops its session on a reason it does not know.
 */
export const EXTENDED_CANCEL_REASONS = ['stream_too_large', 'client_too_slow'] as const;
export type CancelReason = (typeof CANCEL_REASONS)[number] | (typeof EXTENDED_CANCEL_REASONS)[number];

/**
 * Protocol extensions a worker may ask for in `register.features`; the gateway answers with the
 * subset it accepts in `register_ack.features` and never uses one that was not accepted.
 */
export const Features = {
  /** The worker sends `response_start` (status and headers) before a stream's first chunk. */
  RESPONSE_START: 'response_start',
  /** The gateway may send the extended cancel reasons. */
  CANCEL_REASONS: 'cancel_reasons',
  /** The gateway may send `model_load`, `model_unload` and `cache_flush`; the worker answers with `lifecycle_status`. */
  MODEL_LIFECYCLE: 'model_lifecycle',
  /** The worker may add `cache_stats` (its backend's KV-cache usage and prefix-cache hit ratio) to `pong`. */
  CACHE_STATS: 'cache_stats',
  /** The worker reports `gpu_time_ms` in `response_complete`: its backend's own processing time. */
  GPU_TIME: 'gpu_time',
  /** The worker sends a `runner_capabilities` frame whenever its backend's runner document changed. */
  RUNNER_CAPABILITIES: 'runner_capabilities',
} as const;
export const GATEWAY_FEATURES: readonly string[] = [
  Features.RESPONSE_START,
  Features.CANCEL_REASONS,
  Features.MODEL_LIFECYCLE,
  Features.GPU_TIME,
  Features.RUNNER_CAPABILITIES,
  Features.CACHE_STATS,
];

/** Where a lifecycle operation stands, as a worker reports it in `lifecycle_status`. */
export const LIFECYCLE_STATUSES = ['accepted', 'loading', 'completed', 'failed', 'unsupported'] as const;
export type LifecycleStatus = (typeof LIFECYCLE_STATUSES)[number];

/** What a `cache_flush` clears. */
export const CACHE_FLUSH_SCOPES = ['all', 'model', 'tenant', 'tag'] as const;
export type CacheFlushScope = (typeof CACHE_FLUSH_SCOPES)[number];

export interface TokenCounts {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

/** The inference server behind a worker, as the worker detected it (Switchboard extension). */
export interface RunnerInfo {
  /** 'llama-server' | 'vllm' | 'ollama' | 'openai-compatible'; other values are passed through. */
  type: string;
  version?: string;
}

/** Optional per-model capability hints a worker may advertise (Switchboard extension). */
export interface ModelCapabilities {
  vision?: boolean;
  tools?: boolean;
  json_mode?: boolean;
  context_length?: number;
}

// ---- worker → server ----

export interface RegisterMessage {
  type: 'register';
  worker_name: string;
  models: string[];
  max_concurrent: number;
  protocol_version?: string;
  current_load?: number;
  capabilities?: Record<string, ModelCapabilities>;
  /** Endpoint paths the worker's backend serves (Switchboard extension; absent = unknown = all). */
  endpoints?: string[];
  /** Routing priority the worker asks for, lower is preferred (Switchboard extension; default 50). */
  priority?: number;
  /** The backend the worker relays to (Switchboard extension; informational). */
  runner?: RunnerInfo;
  /** The backend's own runner-API capabilities document, relayed as it is (Switchboard extension). */
  runner_capabilities?: Record<string, unknown>;
  /** Protocol extensions the worker asks for (see `Features`). */
  features?: string[];
}

export interface ModelsUpdateMessage {
  type: 'models_update';
  models: string[];
  /** Sent by every known worker; tolerated when absent (then it says nothing about load). */
  current_load?: number;
  capabilities?: Record<string, ModelCapabilities>;
  endpoints?: string[];
  priority?: number;
}

/**
 * Negotiated (`runner_capabilities`): the backend's runner document (its `GET /v1/capabilities`)
 * changed since the worker last sent it (in `register` or in an earlier frame of this type).
 */
export interface RunnerCapabilitiesMessage {
  type: 'runner_capabilities';
  runner_capabilities: Record<string, unknown>;
}

export interface ResponseChunkMessage {
  type: 'response_chunk';
  request_id: string;
  chunk: string;
}

export interface ResponseCompleteMessage {
  type: 'response_complete';
  request_id: string;
  status_code: number;
  headers?: Record<string, string>;
  body?: string;
  token_counts?: TokenCounts;
  /**
   * Negotiated (`gpu_time`): milliseconds the worker's backend call took, measured by the daemon
   * around it (X-GPU-Time-Ms). Only sent once the gateway accepted the feature; optional even then.
   */
  gpu_time_ms?: number;
}

/** Negotiated (`response_start`): a stream's status and headers, before its first chunk. */
export interface ResponseStartMessage {
  type: 'response_start';
  request_id: string;
  status_code: number;
  headers?: Record<string, string>;
}

/** Negotiated (`cache_stats`): the backend's cache state as the daemon last read it; each ratio 0–1, omitted when unknown. */
export interface CacheStats {
  kv_cache_usage_ratio?: number;
  prefix_cache_hit_ratio?: number;
}

export interface PongMessage {
  type: 'pong';
  current_load: number;
  timestamp_unix_ms?: number;
  cache_stats?: CacheStats;
}

export interface WorkerErrorMessage {
  type: 'error';
  request_id?: string;
  code: string;
  message: string;
}

/**
 * Negotiated (`model_lifecycle`): progress or outcome of a `model_load`, `model_unload` or
 * `cache_flush`. Figures the operation does not produce are omitted.
 */
export interface LifecycleStatusMessage {
  type: 'lifecycle_status';
  task_id: string;
  status: LifecycleStatus;
  /** 0–1. */
  progress?: number;
  eta_secs?: number;
  gpu_memory_used_mb?: number;
  gpu_memory_freed_mb?: number;
  entries_removed?: number;
  memory_freed_mb?: number;
  error?: string;
}

export type WorkerToServerMessage =
  | RegisterMessage
  | LifecycleStatusMessage
  | ModelsUpdateMessage
  | RunnerCapabilitiesMessage
  | ResponseChunkMessage
  | ResponseCompleteMessage
  | ResponseStartMessage
  | PongMessage
  | WorkerErrorMessage;

// ---- server → worker ----

export interface RegisterAckMessage {
  type: 'register_ack';
  worker_id: string;
  models: string[];
  warnings?: string[];
  protocol_version?: string;
  /** The accepted subset of the worker's `features`; only sent when the worker sent `features`. */
  features?: string[];
}

export interface RequestMessage {
  type: 'request';
  request_id: string;
  model: string;
  endpoint_path: string;
  is_streaming: boolean;
  body: string;
  headers?: Record<string, string>;
}

export interface CancelMessage {
  type: 'cancel';
  request_id: string;
  reason: CancelReason;
}

export interface PingMessage {
  type: 'ping';
  timestamp_unix_ms?: number;
}

export interface GracefulShutdownMessage {
  type: 'graceful_shutdown';
  reason?: string;
  drain_timeout_secs?: number;
}

export interface ModelsRefreshMessage {
  type: 'models_refresh';
  reason?: string;
}

/** Negotiated (`model_lifecycle`): load a model on the worker's backend, unloading `evict_model` first. */
export interface ModelLoadMessage {
  type: 'model_load';
  task_id: string;
  model_id: string;
  quantization?: string;
  max_context_length?: number;
  gpu_memory_budget_mb?: number;
  evict_model?: string;
  /** The governance token the gateway verified, for backends that implement the runner API and check it again. */
  verified_op_token?: string;
}

/** Negotiated (`model_lifecycle`): unload a model from the worker's backend. */
export interface ModelUnloadMessage {
  type: 'model_unload';
  task_id: string;
  model_id: string;
  verified_op_token?: string;
}

/** Negotiated (`model_lifecycle`): flush the backend's KV cache within a scope. */
export interface CacheFlushMessage {
  type: 'cache_flush';
  task_id: string;
  scope: CacheFlushScope;
  model_id?: string;
  tenant_id?: string;
  tag?: string;
  verified_op_token?: string;
}

export type LifecycleCommandMessage = ModelLoadMessage | ModelUnloadMessage | CacheFlushMessage;

export type ServerToWorkerMessage =
  | RegisterAckMessage
  | ModelLoadMessage
  | ModelUnloadMessage
  | CacheFlushMessage
  | RequestMessage
  | CancelMessage
  | PingMessage
  | GracefulShutdownMessage
  | ModelsRefreshMessage;

/** WebSocket close codes and reasons; the exact strings are part of the contract. */
export const CloseCodes = {
  NORMAL: 1000,
  PROTOCOL_ERROR: 1002,
  POLICY_VIOLATION: 1008,
  INTERNAL_ERROR: 1011,
  /** RFC 6455 "service restart": the gateway is restarting; reconnect soon, no backoff penalty. */
  SERVICE_RESTART: 1012,
  /**
   * RFC 6455 "try again later": this worker's pool or worker name is cordoned (drained by an
   * operator until undrain). Wait a long, capped interval before reconnecting; do not loop.
   */
  TRY_AGAIN_LATER: 1013,
} as const;

export const CloseReasons = {
  AUTH_FAILED: 'worker authentication failed',
  AUTH_RATE_LIMITED: 'worker authentication temporarily rate limited',
  PROTOCOL_ERROR: 'worker registration protocol error',
  DRAIN_COMPLETE: 'graceful shutdown complete',
  DRAIN_TIMED_OUT: 'graceful shutdown timed out',
  HEARTBEAT_TIMEOUT: 'worker heartbeat timed out',
  GATEWAY_RESTARTING: 'gateway restarting: retry soon without penalty',
  CORDONED: 'worker cordoned by an operator: retry later',
} as const;
