const EPOCH_MS = /^\d{1,15}$/;
/** 2025-01-31, 2025-01-31T12:00, 2025-01-31T12:00:00.250Z, 2025-01-31T12:00:00+02:00 */
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

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
