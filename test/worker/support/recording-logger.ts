import { LogFields, Logger } from '../../../src/worker/logger';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields?: LogFields;
}

/** A worker Logger that keeps every line, for unit specs that check what the daemon's parts log. */
export class RecordingLogger implements Logger {
  readonly lines: LogLine[] = [];

  debug(msg: string, fields?: LogFields): void {
    this.lines.push({ level: 'debug', msg, fields });
  }
  info(msg: string, fields?: LogFields): void {
    this.lines.push({ level: 'info', msg, fields });
  }
  warn(msg: string, fields?: LogFields): void {
    this.lines.push({ level: 'warn', msg, fields });
  }
  error(msg: string, fields?: LogFields): void {
    this.lines.push({ level: 'error', msg, fields });
  }
  child(): Logger {
    return this;
  }

  messages(level?: LogLine['level']): string[] {
    return this.lines.filter((l) => !level || l.level === level).map((l) => l.msg);
  }
}
