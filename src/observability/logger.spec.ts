import { Writable } from 'node:stream';
import { Logger } from '@nestjs/common';
import { AppLogger, createLogger } from './logger';
import { REDACTED, scrubSecretFields, scrubSecretText } from './redaction';

const SECRETS = ['sw-worker-s3cret', 'sk-client-key-123', 'admin-t0ken-xyz', 'scrypt$N=16384$abc$def', 'bearer-abc.def'];

function capture(level = 'trace'): { logger: AppLogger; lines: () => Array<Record<string, unknown>>; raw: () => string } {
  let raw = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      raw += chunk.toString();
      done();
    },
  });
  const logger = createLogger(level, stream);
  return {
    logger,
    raw: () => raw,
    lines: () =>
      raw
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

function expectNoSecrets(raw: string): void {
  for (const s of SECRETS) expect(raw).not.toContain(s);
}

describe('createLogger', () => {
  it('writes one JSON object per line with level, time, msg and the Nest context', () => {
    const out = capture('info');
    out.logger.log('worker registered', 'WorkerLink');
    const [line] = out.lines();
    expect(line).toMatchObject({ level: 'info', msg: 'worker registered', context: 'WorkerLink' });
    expect(typeof line.time).toBe('string');
  });

  it('never prints secrets in logged objects, at any depth', () => {
    const out = capture();
    out.logger.pino.info(
      {
        headers: { authorization: `Bearer ${SECRETS[4]}`, 'x-api-key': SECRETS[1], 'x-worker-secret': SECRETS[0] },
        req: { headers: { authorization: 'Bearer bearer-abc.def', 'x-admin-token': SECRETS[2] } },
        provider: { name: 'gpu', secret_hash: SECRETS[3], limits: { nested: { worker_secret: SECRETS[0] } } },
        providers: [{ name: 'a', secretHash: SECRETS[3] }],
        adminToken: SECRETS[2],
        secret: SECRETS[0],
      },
      'provider loaded',
    );
    expectNoSecrets(out.raw());
    const [line] = out.lines() as Array<Record<string, any>>;
    expect(line.headers.authorization).toBe(REDACTED);
    expect(line.provider.limits.nested.worker_secret).toBe(REDACTED);
    expect(line.providers[0]).toEqual({ name: 'a', secretHash: REDACTED });
    expect(line.provider.name).toBe('gpu');
  });

  it('scrubs secrets from messages and URLs, through the Nest API too', () => {
    const out = capture();
    out.logger.warn(`worker dialled wss://gw/v1/worker/connect?provider=gpu&worker_secret=${SECRETS[0]}`, 'WorkerLink');
    out.logger.error('upstream refused', `Error: Authorization: Bearer ${SECRETS[4]}\n    at x (y.js:1:2)`, 'Dispatch');
    out.logger.log({ msg: 'key created', api_key: SECRETS[1] }, 'Admin');
    expectNoSecrets(out.raw());
    const [warn, error, log] = out.lines();
    expect(warn.msg).toContain('provider=gpu&worker_secret=[redacted]');
    expect(error).toMatchObject({ level: 'error', context: 'Dispatch', msg: 'upstream refused' });
    expect(log).toMatchObject({ msg: 'key created', api_key: REDACTED, context: 'Admin' });
  });

  it('does not print secrets carried by child bindings', () => {
    const out = capture();
    out.logger.child({ worker_secret: SECRETS[0], worker: 'w1' }).log('hello');
    expectNoSecrets(out.raw());
    expect(out.lines()[0]).toMatchObject({ worker: 'w1', worker_secret: REDACTED });
  });

  it('gives child loggers carrying correlation_id', () => {
    const out = capture();
    const child = out.logger.forRequest('corr-1');
    child.log('admitted', 'Dispatch');
    child.pino.info({ queue_position: 3 }, 'queued');
    expect(out.lines()).toEqual([
      expect.objectContaining({ correlation_id: 'corr-1', msg: 'admitted', context: 'Dispatch' }),
      expect.objectContaining({ correlation_id: 'corr-1', msg: 'queued', queue_position: 3 }),
    ]);
  });

  it('tells a stack from a context on error(), like Nest does', () => {
    const out = capture();
    out.logger.error('boom', 'Error: boom\n    at f (a.js:1:1)');
    out.logger.error('bang', 'Bootstrap');
    out.logger.error(new Error('kaput'), 'Bootstrap');
    const [a, b, c] = out.lines() as Array<Record<string, any>>;
    expect(a.stack).toContain('at f');
    expect(a.context).toBeUndefined();
    expect(b).toMatchObject({ msg: 'bang', context: 'Bootstrap' });
    expect(c).toMatchObject({ msg: 'kaput', context: 'Bootstrap' });
    expect(c.err.message).toBe('kaput');
  });

  it('maps Nest levels onto pino levels and honours the threshold', () => {
    const out = capture('debug');
    out.logger.verbose('too chatty');
    out.logger.debug('detail');
    out.logger.fatal('dying');
    expect(out.lines().map((l) => l.level)).toEqual(['debug', 'fatal']);
  });

  it('logs nothing at level silent', () => {
    const out = capture('silent');
    out.logger.fatal('nope');
    out.logger.error('nope');
    out.logger.pino.fatal('nope');
    expect(out.raw()).toBe('');
  });

  it('serves as the logger behind Nest\'s static Logger', () => {
    const out = capture('info');
    Logger.overrideLogger(out.logger);
    try {
      new Logger('RoutesResolver').log('Mapped {/health, GET} route');
    } finally {
      Logger.overrideLogger(false);
    }
    expect(out.lines()[0]).toMatchObject({ context: 'RoutesResolver', msg: 'Mapped {/health, GET} route' });
  });
});

describe('redaction helpers', () => {
  it('leaves objects without secrets untouched (no copy)', () => {
    const fields = { a: 1, b: { c: [1, 2] } };
    expect(scrubSecretFields(fields)).toBe(fields);
  });

  it('does not mutate the caller\'s object and survives cycles', () => {
    const fields: Record<string, unknown> = { secret: 'x', nested: { token: 'y' } };
    fields.self = fields;
    const clean = scrubSecretFields(fields) as Record<string, any>;
    expect(fields.secret).toBe('x');
    expect(clean.secret).toBe(REDACTED);
    expect(clean.nested.token).toBe(REDACTED);
  });

  it('scrubs key=value secrets and bearer tokens in text, keeping the rest', () => {
    expect(scrubSecretText('/v1/worker/connect?worker_secret=abc&provider=gpu')).toBe(
      '/v1/worker/connect?worker_secret=[redacted]&provider=gpu',
    );
    expect(scrubSecretText('api_key=k1 max_tokens=5 tokens=7')).toBe('api_key=[redacted] max_tokens=5 tokens=7');
    expect(scrubSecretText('Authorization: Bearer sk-abc.def')).toBe('Authorization: Bearer [redacted]');
    expect(scrubSecretText('nothing to see')).toBe('nothing to see');
  });
});
