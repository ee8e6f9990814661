import { Errors, GatewayError } from '../common/gateway-error';
import { parseTime } from '../common/parse-time';
import { TENANT_ID } from '../config/sections/tenancy';

export { parseTime };

export const USAGE_GROUPS = ['tenant', 'key', 'model', 'pool', 'day'] as const;
export type UsageGroupBy = (typeof USAGE_GROUPS)[number];

/** A validated `GET /admin/usage` query. Times are epoch ms; `since` inclusive, `until` exclusive. */
export interface UsageQuery {
  tenant?: string;
  keyId?: string;
  since?: number;
  until?: number;
  groupBy?: UsageGroupBy;
}

const PARAMS = ['tenant', 'key', 'since', 'until', 'group_by'];
const KEY_ID = /^[\x21-\x7e]{1,64}$/;

/**
 * Validates the query string of `GET /admin/usage`; every problem is a 400 naming the parameter.
 * `since`/`until`: ISO-8601 (a date alone is midnight UTC, a time without an offset is UTC) or
 * epoch milliseconds.
 */
export function parseUsageQuery(raw: Record<string, unknown>): UsageQuery | GatewayError {
  for (const name of Object.keys(raw)) {
    if (!PARAMS.includes(name)) return Errors.invalidRequest(`Unknown query parameter '${shown(name)}' (known: ${PARAMS.join(', ')})`, name);
  }
  const query: UsageQuery = {};
  for (const name of PARAMS) {
    const value = raw[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') return Errors.invalidRequest(`Query parameter '${name}' must be given once`, name);
    if (value === '') return Errors.invalidRequest(`Query parameter '${name}' must not be empty`, name);
    switch (name) {
      case 'tenant':
        if (!TENANT_ID.test(value)) return Errors.invalidRequest("Query parameter 'tenant' must be 1-64 characters of A-Z a-z 0-9 . _ -", name);
        query.tenant = value;
        break;
      case 'key':
        if (!KEY_ID.test(value)) return Errors.invalidRequest("Query parameter 'key' must be an API key id (1-64 printable characters, no spaces)", name);
        query.keyId = value;
        break;
      case 'since':
      case 'until': {
        const time = parseTime(value);
        if (time === undefined) {
          return Errors.invalidRequest(
            `Query parameter '${name}' must be an ISO-8601 date or date-time (2025-01-31, 2025-01-31T12:00:00Z) or epoch milliseconds, got '${shown(value)}'`,
            name,
          );
        }
        if (name === 'since') query.since = time;
        else query.until = time;
        break;
      }
      case 'group_by':
        if (!(USAGE_GROUPS as readonly string[]).includes(value)) {
          return Errors.invalidRequest(`Query parameter 'group_by' must be one of ${USAGE_GROUPS.join(', ')}, got '${shown(value)}'`, name);
        }
        query.groupBy = value as UsageGroupBy;
        break;
    }
  }
  if (query.since !== undefined && query.until !== undefined && query.since >= query.until) {
    return Errors.invalidRequest("Query parameter 'since' must be before 'until' (since is inclusive, until exclusive)", 'since');
  }
  return query;
}

/** A client value echoed in a message: short and printable. */
function shown(value: string): string {
  const printable = value.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 64 ? `${printable.slice(0, 64)}…` : printable;
}
