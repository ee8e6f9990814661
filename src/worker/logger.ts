/**
 * A tiny structured logger: one JSON object per line on stderr. It never prints secrets:
 * sensitive field names are masked wherever they appear, and every registered secret value is
 * scrubbed from the final line, so a secret that sneaks into an error message is caught too.
 */

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const SEVERITY: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

const SENSITIVE_KEYS = new Set([
  'authorization',
  'proxy-authorization',
  'x-api-key',
  'x-worker-secret',
  'worker_secret',
  'workersecret',
  'secret',
  'backend_api_key',
  'backendapikey',
  'api_key',
  'apikey',
  'cookie',
  'set-cookie',
]);

export const REDACTED = '[redacted]';

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go; defaults to process.stderr. */
  write?: (line: string) => void;
  /** Values that must never appear in output (worker secret, backend key). */
  secrets?: readonly string[];
  base?: LogFields;
}

function sanitize(value: unknown, depth = 0): unknown {
  if (value instanceof Error) {
    const out: LogFields = { message: value.message, name: value.name };
    const code = (value as NodeJS.ErrnoException).code;
    if (code) out.code = code;
    return out;
  }
  if (value === null || typeof value !== 'object') return value;
  if (depth > 6) return '[deep]';
  if (Array.isArray(value)) return value.map((v) => sanitize(v, depth + 1));
  const out: LogFields = {};
  for (const [k, v] of Object.entries(value as LogFields)) {
    out[k] = SENSITIVE_KEYS.has(k.toLowerCase()) ? REDACTED : sanitize(v, depth + 1);
  }
  return out;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = SEVERITY[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  // Longest first so a secret that contains another is scrubbed whole.
  const secrets = (options.secrets ?? []).filter((s) => s.length > 0).sort((a, b) => b.length - a.length);

  const scrub = (line: string): string => {
    for (const s of secrets) {
      if (line.includes(s)) line = line.split(s).join(REDACTED);
      const escaped = JSON.stringify(s).slice(1, -1);
      if (escaped !== s && line.includes(escaped)) line = line.split(escaped).join(REDACTED);
    }
    return line;
  };

  const make = (base: LogFields): Logger => {
    const emit = (level: Exclude<LogLevel, 'silent'>, msg: string, fields?: LogFields) => {
      if (SEVERITY[level] < threshold) return;
      const record = sanitize({ time: new Date().toISOString(), level, msg, ...base, ...fields });
      let line: string;
      try {
        line = JSON.stringify(record);
      } catch {
        line = JSON.stringify({ time: new Date().toISOString(), level, msg, note: 'fields not serializable' });
      }
      write(scrub(line) + '\n');
    };
    return {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      child: (fields) => make({ ...base, ...fields }),
    };
  };
  return make({ ...(options.base ?? {}) });
}

/** A logger that drops everything (programmatic use without logging). */
export const silentLogger: Logger = createLogger({ level: 'silent' });
