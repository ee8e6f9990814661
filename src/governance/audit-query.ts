import { Errors, GatewayError } from '../common/gateway-error';
import { parseTime } from '../common/parse-time';
import { AUDIT_OUTCOMES, AuditOutcome, AuditQuery } from './audit-log';
import { LIFECYCLE_OPERATIONS, LifecycleOperation } from './op-token';

const PARAMS = ['operation', 'outcome', 'model', 'task', 'actor', 'action', 'target', 'since', 'until', 'before', 'limit'];
export const DEFAULT_AUDIT_LIMIT = 100;
export const MAX_AUDIT_LIMIT = 1000;
/** `keys.create`, `workers.refresh-models`, `lifecycle.model-load` (see AUDITED_ACTIONS in audited.ts). */
const ACTION = /^[a-z][a-z-]{0,30}\.[a-z][a-z-]{0,30}$/;
const POSITIVE_INT = /^[1-9]\d{0,14}$/;
/** PostgreSQL refuses a NUL in a query (a 500), and no row holds one (see audit-log.typeorm.ts). */
const NUL = /\u0000/;

/**
 * Validates the query string of `GET /admin/audit`; every problem is a 400 naming the parameter.
 * `since`/`until` take what `/admin/usage` takes (ISO-8601 or epoch ms).
 */
export function parseAuditQuery(raw: Record<string, unknown>): AuditQuery | GatewayError {
  for (const name of Object.keys(raw)) {
    if (!PARAMS.includes(name)) return Errors.invalidRequest(`Unknown query parameter '${shown(name)}' (known: ${PARAMS.join(', ')})`, name);
  }
  const query: AuditQuery = { limit: DEFAULT_AUDIT_LIMIT };
  for (const name of PARAMS) {
    const value = raw[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') return Errors.invalidRequest(`Query parameter '${name}' must be given once`, name);
    if (value === '') return Errors.invalidRequest(`Query parameter '${name}' must not be empty`, name);
    const problem = apply(query, name, value);
    if (problem) return Errors.invalidRequest(problem, name);
  }
  if (query.since !== undefined && query.until !== undefined && query.since >= query.until) {
    return Errors.invalidRequest("Query parameter 'since' must be before 'until' (since is inclusive, until exclusive)", 'since');
  }
  return query;
}

/** Sets one parameter; returns the problem, if any. */
function apply(query: AuditQuery, name: string, value: string): string | undefined {
  switch (name) {
    case 'operation':
      if (!(LIFECYCLE_OPERATIONS as readonly string[]).includes(value))
        return `Query parameter 'operation' must be one of ${LIFECYCLE_OPERATIONS.join(', ')}, got '${shown(value)}'`;
      query.operation = value as LifecycleOperation;
      return undefined;
    case 'outcome':
      if (!(AUDIT_OUTCOMES as readonly string[]).includes(value))
        return `Query parameter 'outcome' must be one of ${AUDIT_OUTCOMES.join(', ')}, got '${shown(value)}'`;
      query.outcome = value as AuditOutcome;
      return undefined;
    case 'model':
      if (value.length > 255) return "Query parameter 'model' must be at most 255 characters";
      if (NUL.test(value)) return "Query parameter 'model' must not contain a NUL character";
      query.modelId = value;
      return undefined;
    case 'task':
      if (value.length > 64) return "Query parameter 'task' must be at most 64 characters";
      if (NUL.test(value)) return "Query parameter 'task' must not contain a NUL character";
      query.taskId = value;
      return undefined;
    case 'actor':
    case 'target':
      if (value.length > 255) return `Query parameter '${name}' must be at most 255 characters`;
      if (NUL.test(value)) return `Query parameter '${name}' must not contain a NUL character`;
      if (name === 'actor') query.actor = value;
      else query.targetId = value;
      return undefined;
    case 'action':
      if (!ACTION.test(value)) return `Query parameter 'action' must be an action name such as keys.create or lifecycle.model-load, got '${shown(value)}'`;
      query.action = value;
      return undefined;
    case 'since':
    case 'until': {
      const time = parseTime(value);
      if (time === undefined)
        return `Query parameter '${name}' must be an ISO-8601 date or date-time (2025-01-31, 2025-01-31T12:00:00Z) or epoch milliseconds, got '${shown(value)}'`;
      query[name] = time;
      return undefined;
    }
    case 'before':
      if (!POSITIVE_INT.test(value)) return `Query parameter 'before' must be an audit row id (a positive integer), got '${shown(value)}'`;
      query.before = Number(value);
      return undefined;
    case 'limit':
      if (!POSITIVE_INT.test(value) || Number(value) > MAX_AUDIT_LIMIT)
        return `Query parameter 'limit' must be an integer from 1 to ${MAX_AUDIT_LIMIT}, got '${shown(value)}'`;
      query.limit = Number(value);
      return undefined;
  }
  return undefined;
}

function shown(value: string): string {
  const printable = value.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 64 ? `${printable.slice(0, 64)}…` : printable;
}
