import { EventEmitter } from 'node:events';
import { installProcessErrorHandlers } from './process-errors';

describe('process-level error handlers', () => {
  const setup = () => {
    const proc = new EventEmitter();
    const lines: string[] = [];
    const stops: string[] = [];
    let t = 0;
    const remove = installProcessErrorHandlers(proc, {
      log: { error: (m) => lines.push(m) },
      stop: (r) => stops.push(r),
      burstLimit: 3,
      burstWindowMs: 1000,
      now: () => t,
    });
    return { proc, lines, stops, remove, advance: (ms: number) => (t += ms) };
  };

  it('logs an unhandled rejection with its stack and keeps serving, however many there are', () => {
    const { proc, lines, stops } = setup();
    for (let i = 0; i < 50; i++) proc.emit('unhandledRejection', new RangeError('Invalid time value'));
    expect(lines).toHaveLength(50);
    expect(lines[0]).toMatch(/^unhandled promise rejection \(the gateway keeps serving\): RangeError: Invalid time value\n\s+at /);
    expect(stops).toEqual([]);
  });

  it('logs uncaught exceptions and keeps serving, but stops (once) when more than the limit come within the window', () => {
    const { proc, lines, stops, advance } = setup();
    for (let i = 0; i < 3; i++) proc.emit('uncaughtException', new Error(`e${i}`));
    advance(1000);
    for (let i = 0; i < 3; i++) proc.emit('uncaughtException', new Error(`f${i}`));
    expect(stops).toEqual([]);
    proc.emit('uncaughtException', new Error('one too many'));
    proc.emit('uncaughtException', 'not even an Error');
    expect(stops).toEqual(['4 uncaught exceptions within 1 s']);
    expect(lines.at(-2)).toContain('stopping the gateway');
    expect(lines.at(-1)).toContain('not even an Error');
  });

  it('removes its handlers', () => {
    const { proc, remove } = setup();
    remove();
    expect(proc.listenerCount('unhandledRejection') + proc.listenerCount('uncaughtException')).toBe(0);
  });
});
