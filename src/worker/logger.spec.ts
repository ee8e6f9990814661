import { createLogger } from './logger';

function capture(secrets: string[] = []) {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', secrets, write: (l) => lines.push(l) });
  return { log, lines };
}

describe('worker logger', () => {
  it('writes one JSON object per line with level, message and fields', () => {
    const { log, lines } = capture();
    log.child({ component: 'w' }).info('hello', { n: 1 });
    expect(lines).toHaveLength(1);
    expect(lines[0].endsWith('\n')).toBe(true);
    expect(JSON.parse(lines[0])).toEqual({ time: expect.any(String), level: 'info', msg: 'hello', component: 'w', n: 1 });
  });

  it('masks credential headers wherever they appear in the fields', () => {
    const { log, lines } = capture();
    log.info('req', { headers: { Authorization: 'Bearer abc', 'x-api-key': 'k', 'x-worker-secret': 's', accept: 'x' } });
    expect(JSON.parse(lines[0]).headers).toEqual({
      Authorization: '[redacted]',
      'x-api-key': '[redacted]',
      'x-worker-secret': '[redacted]',
      accept: 'x',
    });
  });

  it('scrubs registered secret values even from free text and error messages', () => {
    const { log, lines } = capture(['hunter2"x', 'tok-123']);
    log.error('failed with tok-123', { error: new Error('auth hunter2"x rejected'), nested: ['tok-123'] });
    const text = lines.join('');
    expect(text).not.toContain('tok-123');
    expect(text).not.toContain('hunter2');
    expect(JSON.parse(lines[0]).error.message).toBe('auth [redacted] rejected');
  });

  it('drops lines below the configured level', () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'warn', write: (l) => lines.push(l) });
    log.debug('a');
    log.info('b');
    log.warn('c');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['c']);
  });
});
