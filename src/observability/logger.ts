import type { LoggerService } from '@nestjs/common';
import pino, { DestinationStream, Level, Logger as PinoLogger } from 'pino';
import { REDACT_PATHS, REDACTED, scrubSecretFields, scrubSecretText } from './redaction';

export type AppLogLevel = Level | 'silent';

/**
 * The structured logger: pino JSON lines on stdout (or `destination`), secrets removed three ways:
 * pino `redact` paths, secret field names at any depth, and `worker_secret=…` / `Bearer …` inside
 * the final line (messages, URLs).
 */
export function createPinoLogger(level: AppLogLevel, destination?: DestinationStream): PinoLogger {
  const options: pino.LoggerOptions = {
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
  return destination ? pino(options, destination) : pino(options);
}

/** Nest's LoggerService used by bootstrap (`createLogger(config.logLevel)`). */
export function createLogger(level: string, destination?: DestinationStream): AppLogger {
  return new AppLogger(createPinoLogger(level as AppLogLevel, destination));
}

/** Nest prints a stack passed to error(); this is how it tells a stack from a context name. */
const STACK_TRACE = /^(.)+\n\s+at .+:\d+:\d+/;

/**
 * Nest LoggerService over pino. Nest's context argument becomes the `context` field.
 * `child({ correlation_id })` gives a logger whose every line carries those fields; the raw pino
 * logger is `logger.pino` for call sites that prefer pino's `(fields, message)` style.
 */
export class AppLogger implements LoggerService {
  constructor(readonly pino: PinoLogger) {}

  child(bindings: Record<string, unknown>): AppLogger {
    return new AppLogger(this.pino.child(bindings));
  }

  /** Shorthand for the relay: every line of the returned logger carries `correlation_id`. */
  forRequest(correlationId: string): AppLogger {
    return this.child({ correlation_id: correlationId });
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
    if (!this.pino.isLevelEnabled(level)) return;
    const rest = [...params];
    const fields: Record<string, unknown> = {};

    const last = rest[rest.length - 1];
    const loneStack = level === 'error' && rest.length === 1 && typeof last === 'string' && STACK_TRACE.test(last);
    if (typeof last === 'string' && !loneStack) fields.context = rest.pop();
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
