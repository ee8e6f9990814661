import type { LoggerService } from '@nestjs/common';
import pino, { DestinationStream, Level, Logger as PinoLogger } from 'pino';
import { REDACT_PATHS, REDACTED, scrubSecretFields, scrubSecretText } from './redaction';

export type AppLogLevel = Level | 'silent';

/** `json`: one pino JSON object per line. `pretty`: one human-readable line per entry. */
export type LogFormat = 'json' | 'pretty';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

export interface LoggerOptions {
  /** Default `json`. */
  format?: LogFormat;
  /** Pretty format only: colour the level (ANSI escapes). Default false. */
  color?: boolean;
}

/**
 * The format LOG_FORMAT asks for: `json` or `pretty` (any case); unset, empty or `auto` means
 * pretty when stdout is a terminal, JSON otherwise. Throws an Error naming the variable for
 * anything else.
 */
export function resolveLogFormat(value: string | undefined, stdoutIsTty: boolean): LogFormat {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'auto') return stdoutIsTty ? 'pretty' : 'json';
  if ((LOG_FORMATS as readonly string[]).includes(v)) return v as LogFormat;
  throw new Error(`LOG_FORMAT must be one of json, pretty, auto, got "${value}"`);
}

/**
 * The structured logger: pino JSON lines on stdout (or `destination`), secrets removed three ways:
 * pino `redact` paths, secret field names at any depth, and `worker_secret=…` / `Bearer …` inside
 * the final line (messages, URLs). The pretty format is derived from that final, already
 * redacted JSON line (and the text scrub runs again on the pretty line), so redaction is the same
 * in both formats.
 */
export function createPinoLogger(level: AppLogLevel, destination?: DestinationStream, options: LoggerOptions = {}): PinoLogger {
  const pinoOptions: pino.LoggerOptions = {
    level,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: {
      level: (label) => ({ level: label }),
      bindings: (bindings) => scrubSecretFields(bindings),
      log: (fields) => scrubSecretFields(fields),
    },
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    hooks: { streamWrite: scrubSecretText },
  };
  if (options.format === 'pretty') {
    return pino(pinoOptions, new PrettyStream(destination ?? process.stdout, options.color ?? false));
  }
  return destination ? pino(pinoOptions, destination) : pino(pinoOptions);
}

/** Nest's LoggerService used by bootstrap (`createLogger(config.logLevel)`). */
export function createLogger(level: string, destination?: DestinationStream, options: LoggerOptions = {}): AppLogger {
  return new AppLogger(createPinoLogger(level as AppLogLevel, destination, options));
}

/** Nest prints a stack passed to error(); this is how it tells a stack from a context name. */
const STACK_TRACE = /^(.)+\n\s+at .+:\d+:\d+/;

/**
 * Nest's own start-up chatter (one line per module, controller and route: about 45 lines) is
 * logged at debug instead of info; the gateway prints its own one-line boot summary (context
 * `Boot`). Warnings and errors from these contexts keep their level.
 */
export const FRAMEWORK_CONTEXTS: ReadonlySet<string> = new Set([
  'NestFactory',
  'NestApplication',
  'NestApplicationContext',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'WebSocketsController',
  'MiddlewareModule',
]);

/** Decides to drop a line written through the Nest API (level, context, message text). */
export type LogMute = (level: Level, context: string | undefined, text: string | undefined) => boolean;

/**
 * Nest LoggerService over pino. Nest's context argument becomes the `context` field.
 * `child({ correlation_id })` gives a logger whose every line carries those fields; the raw pino
 * logger is `logger.pino` for call sites that prefer pino's `(fields, message)` style.
 */
export class AppLogger implements LoggerService {
  private mutes: LogMute[] = [];

  constructor(readonly pino: PinoLogger) {}

  child(bindings: Record<string, unknown>): AppLogger {
    return new AppLogger(this.pino.child(bindings));
  }

  /** Shorthand for the relay: every line of the returned logger carries `correlation_id`. */
  forRequest(correlationId: string): AppLogger {
    return this.child({ correlation_id: correlationId });
  }

  /**
   * Drops the Nest-API lines `mute` matches until the returned function is called (bootstrap uses
   * it so a failed listen is reported once, by the CLI, rather than also by Nest).
   */
  muteWhile(mute: LogMute): () => void {
    this.mutes.push(mute);
    return () => {
      this.mutes = this.mutes.filter((m) => m !== mute);
    };
  }

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    const rest = [...params];
    const fields: Record<string, unknown> = {};

    const last = rest[rest.length - 1];
    const loneStack = level === 'error' && rest.length === 1 && typeof last === 'string' && STACK_TRACE.test(last);
    if (typeof last === 'string' && !loneStack) fields.context = rest.pop();
    const context = fields.context as string | undefined;
    if (level === 'info' && context !== undefined && FRAMEWORK_CONTEXTS.has(context)) level = 'debug';
    if (!this.pino.isLevelEnabled(level)) return;
    if (this.mutes.length > 0) {
      const text = message instanceof Error ? message.message : typeof message === 'object' && message !== null ? undefined : String(message);
      if (this.mutes.some((m) => m(level, context, text))) return;
    }
    if (level === 'error' && typeof rest[0] === 'string') fields.stack = rest.shift();
    if (rest.length > 0) fields.extra = rest;

    let text: string | undefined;
    if (message instanceof Error) {
      fields.err = message;
      text = message.message;
    } else if (message !== null && typeof message === 'object') {
      Object.assign(fields, message);
    } else {
      text = String(message);
    }
    this.pino[level](fields, text);
  }
}

// ---------------------------------------------------------------------------------------------
// The pretty format

/** Fields the pretty line shows in its fixed columns or leaves out (pid and hostname). */
const PRETTY_OMITTED = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'context']);

const LEVEL_COLOR: Record<string, string> = {
  trace: '\x1b[90m',
  debug: '\x1b[36m',
  info: '\x1b[32m',
  warn: '\x1b[33m',
  error: '\x1b[31m',
  fatal: '\x1b[35m',
};
const RESET = '\x1b[0m';
const DIM = '\x1b[2m';

/**
 * Turns one pino JSON line into `HH:MM:SS.mmm LEVEL [Context] message key=value …` (UTC time of
 * day), with error stacks on indented lines after it. Lines that are not JSON pass through.
 */
export function formatPretty(jsonLine: string, color = false): string {
  let entry: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(jsonLine);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return ensureNewline(jsonLine);
    entry = parsed as Record<string, unknown>;
  } catch {
    return ensureNewline(jsonLine);
  }
  const level = typeof entry.level === 'string' ? entry.level : String(entry.level ?? '');
  const time = typeof entry.time === 'string' && entry.time.length >= 23 ? entry.time.slice(11, 23) : String(entry.time ?? '');
  const levelText = level.toUpperCase().padEnd(5);
  const parts = [color ? `${DIM}${time}${RESET}` : time, color ? `${LEVEL_COLOR[level] ?? ''}${levelText}${RESET}` : levelText];
  if (typeof entry.context === 'string' && entry.context !== '') parts.push(`[${entry.context}]`);
  if (entry.msg !== undefined && entry.msg !== '') parts.push(indentContinuation(String(entry.msg)));

  const trailing: string[] = [];
  for (const [key, value] of Object.entries(entry)) {
    if (PRETTY_OMITTED.has(key) || value === undefined) continue;
    if (key === 'stack' && typeof value === 'string') {
      trailing.push(value);
      continue;
    }
    if (key === 'err' && value !== null && typeof value === 'object') {
      const err = value as Record<string, unknown>;
      const message = typeof err.message === 'string' ? err.message : JSON.stringify(err);
      parts.push(`err=${prettyValue(message)}`);
      if (typeof err.stack === 'string') trailing.push(err.stack);
      continue;
    }
    parts.push(`${key}=${prettyValue(value)}`);
  }
  let out = parts.join(' ');
  for (const block of trailing) out += `\n${block.replace(/^/gm, '    ')}`;
  return ensureNewline(scrubSecretText(out));
}

/** Bare when unambiguous, JSON-quoted otherwise; arrays of scalars as comma-separated lists. */
function prettyValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"'=\\]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string' && /^[^\s"'=\\,]+$/.test(v))) {
    return value.join(',');
  }
  return JSON.stringify(value);
}

function indentContinuation(text: string): string {
  return text.includes('\n') ? text.replace(/\n/g, '\n    ') : text;
}

function ensureNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

/** A pino destination that writes each JSON line to `out` in the pretty format. */
export class PrettyStream implements DestinationStream {
  constructor(
    private readonly out: { write(text: string): unknown },
    private readonly color: boolean,
  ) {}

  write(line: string): void {
    this.out.write(formatPretty(line, this.color));
  }
}

// ---------------------------------------------------------------------------------------------
// One logger per app

const loggersByConfig = new WeakMap<object, AppLogger>();

/**
 * bootstrap registers the logger it built for an app's config, so the AppLogger that modules get
 * injected (ObservabilityModule) is that same logger: same level, format and destination.
 */
export function registerAppLogger(config: object, logger: AppLogger): void {
  loggersByConfig.set(config, logger);
}

export function appLoggerFor(config: object | undefined): AppLogger | undefined {
  return config ? loggersByConfig.get(config) : undefined;
}
