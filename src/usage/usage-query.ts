import { Errors, GatewayError } from '../common/gateway-error';
import { TENANT_ID } from '../config/sections/tenancy';

export const USAGE_GROUPS = ['tenant', 'key', 'model', 'day'] as const;
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
const EPOCH_MS = /^\d{1,15}$/;
/** 2025-01-31, 2025-01-31T12:00, 2025-01-31T12:00:00.250Z, 2025-01-31T12:00:00+02:00 */
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

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

/** ISO-8601 (strict: real calendar dates and times) or epoch ms → epoch ms; undefined if neither. */
export function parseTime(value: string): number | undefined {
  if (EPOCH_MS.test(value)) return Number(value);
  const m = ISO_8601.exec(value);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4] ?? '0', m[5] ?? '0', m[6] ?? '0'].map(Number);
  const millis = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0;
  if (year < 1970 || hour > 23 || minute > 59 || second > 59) return undefined;
  const local = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  const d = new Date(local);
  // Date.UTC rolls 2025-02-30 over into March: a date that does not round-trip does not exist.
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day) return undefined;
  const offset = parseOffsetMinutes(m[8]);
  return offset === undefined ? undefined : local - offset * 60_000;
}

function parseOffsetMinutes(tz: string | undefined): number | undefined {
  if (tz === undefined || tz === 'Z' || tz === 'z') return 0;
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(tz)!;
  const hours = Number(m[2]);
  const minutes = Number(m[3]);
  if (hours > 23 || minutes > 59) return undefined;
  return (m[1] === '-' ? -1 : 1) * (hours * 60 + minutes);
}

/** A client value echoed in a message: short and printable. */
function shown(value: string): string {
  const printable = value.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 64 ? `${printable.slice(0, 64)}…` : printable;
}
