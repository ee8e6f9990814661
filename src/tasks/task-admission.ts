import { Errors, GatewayError, GatewayErrorCode } from '../common/gateway-error';
import type { TaskParams } from './task';

/** Which admission check a refusal comes from (the body's `check`). */
const CHECK: Partial<Record<GatewayErrorCode, string>> = {
  invalid_request: 'params',
  invalid_params: 'params',
  conflict: 'task_id',
  unknown_model: 'model',
  model_not_allowed: 'model',
  capability_mismatch: 'capabilities',
  pool_unready: 'pool',
  pool_unavailable: 'pool',
  provider_disabled: 'pool',
  no_healthy_worker: 'pool',
  fallback_exhausted: 'pool',
  rate_limit_exceeded: 'rate_limit',
  budget_exceeded: 'tenant_budget',
  queue_full: 'queue',
};

/** The router names the pin by its header; a task names it `pool_id`. */
const PIN_HEADER = 'x-switchboard-provider';

/**
 * A refusal of `POST /v1/tasks` as the task client should read it: which check failed (`check`),
 * the pin called `pool_id`, a context-length mismatch (the router's capability filter, fed
 * with prompt + `max_tokens`) reported as `context_exceeded`, and an unknown model as the
 * admission rejection `unknown_model` (400; the inference routes keep 404 `model_not_found`).
 */
export function admissionError(error: GatewayError, req: TaskParams, promptTokens: number): GatewayError {
  if (error.code === 'capability_mismatch' && sameItems(error.details.fields?.missing, ['context_length'])) {
    return Errors.contextExceeded({ promptTokens, maxTokens: req.maxTokens, model: req.model }).with({
      fields: error.details.fields?.pool_id ? { pool_id: error.details.fields.pool_id } : {},
    });
  }
  if (error.code === 'invalid_params' && error.details.param === PIN_HEADER) {
    return new GatewayError('invalid_params', error.message.split(PIN_HEADER).join('pool_id'), {
      ...error.details,
      param: 'pool_id',
      fields: { ...error.details.fields, check: 'pool' },
    });
  }
  if (error.code === 'model_not_found') error = Errors.unknownModel(error);
  const check = CHECK[error.code];
  return check && error.details.fields?.check === undefined ? error.with({ fields: { check } }) : error;
}

function sameItems(value: unknown, expected: string[]): boolean {
  return Array.isArray(value) && value.length === expected.length && expected.every((e) => value.includes(e));
}
