import { Writable } from 'node:stream';
import { Logger } from '@nestjs/common';
import { AppLogger, appLoggerFor, createLogger, formatPretty, registerAppLogger, resolveLogFormat } from './logger';
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

  it("serves as the logger behind Nest's static Logger", () => {
    const out = capture('info');
    Logger.overrideLogger(out.logger);
    try {
      new Logger('WorkerLink').log('worker registered');
    } finally {
      Logger.overrideLogger(false);
    }
    expect(out.lines()[0]).toMatchObject({ context: 'WorkerLink', msg: 'worker registered' });
  });

  it("logs Nest's start-up chatter at debug, keeping its warnings and errors", () => {
    const info = capture('info');
    for (const context of ['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']) {
      info.logger.log('framework line', context);
    }
    info.logger.warn('deprecated option', 'NestApplication');
    info.logger.error('listen failed', 'NestApplication');
    expect(info.lines().map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'deprecated option'],
      ['error', 'listen failed'],
    ]);

    const debug = capture('debug');
    debug.logger.log('Mapped {/health, GET} route', 'RouterExplorer');
    expect(debug.lines()).toEqual([expect.objectContaining({ level: 'debug', context: 'RouterExplorer', msg: 'Mapped {/health, GET} route' })]);
  });

  it('drops the lines a mute matches until it is lifted', () => {
    const out = capture('info');
    const unmute = out.logger.muteWhile((level, context) => level === 'error' && context === 'NestApplication');
    out.logger.error('Error: listen EADDRINUSE', 'NestApplication');
    out.logger.error('other failure', 'Dispatch');
    unmute();
    out.logger.error('after', 'NestApplication');
    expect(out.lines().map((l) => l.msg)).toEqual(['other failure', 'after']);
  });
});

describe('the pretty format', () => {
  function prettyCapture(level = 'trace', color = false): { logger: AppLogger; text: () => string } {
    let text = '';
    const stream = { write: (s: string) => (text += s) };
    return { logger: createLogger(level, stream, { format: 'pretty', color }), text: () => text };
  }

  it('prints time, level, context, message and key=value fields on one line', () => {
    const out = prettyCapture();
    out.logger
      .child({ context: 'AccessLog' })
      .pino.info(
        { method: 'POST', url: '/v1/chat/completions', status: 200, duration_ms: 812.4, note: 'two words', ok: true, tags: ['a', 'b'], obj: { n: 1 } },
        'request completed',
      );
    expect(out.text()).toMatch(
      /^\d{2}:\d{2}:\d{2}\.\d{3} INFO {2}\[AccessLog\] request completed method=POST url=\/v1\/chat\/completions status=200 duration_ms=812\.4 note="two words" ok=true tags=a,b obj=\{"n":1\}\n$/,
    );
    expect(out.text()).not.toContain('pid=');
    expect(out.text()).not.toContain('hostname=');
  });

  it('puts error stacks on indented lines after the entry', () => {
    const out = prettyCapture();
    out.logger.error('upstream refused', 'Error: refused\n    at connect (net.js:1:2)', 'Dispatch');
    out.logger.error(new Error('kaput'), 'Bootstrap');
    const lines = out.text().split('\n');
    expect(lines[0]).toMatch(/ERROR \[Dispatch\] upstream refused$/);
    expect(lines[1]).toBe('    Error: refused');
    expect(lines[2]).toBe('        at connect (net.js:1:2)');
    expect(out.text()).toMatch(/ERROR \[Bootstrap\] kaput err=kaput\n {4}Error: kaput\n {8}at /);
  });

  it('redacts secrets exactly like the JSON format', () => {
    const out = prettyCapture();
    out.logger.pino.info(
      {
        headers: { authorization: `Bearer ${SECRETS[4]}`, 'x-api-key': SECRETS[1] },
        provider: { name: 'gpu', secret_hash: SECRETS[3], limits: { nested: { worker_secret: SECRETS[0] } } },
        adminToken: SECRETS[2],
      },
      'provider loaded',
    );
    out.logger.warn(`worker dialled wss://gw/v1/worker/connect?provider=gpu&worker_secret=${SECRETS[0]}`, 'WorkerLink');
    out.logger.error('upstream refused', `Error: Authorization: Bearer ${SECRETS[4]}\n    at x (y.js:1:2)`, 'Dispatch');
    out.logger.child({ worker_secret: SECRETS[0] }).log({ msg: 'key created', api_key: SECRETS[1] }, 'Admin');
    expectNoSecrets(out.text());
    expect(out.text()).toContain('worker_secret=[redacted]');
    expect(out.text()).toContain('"authorization":"[redacted]"');
  });

  it('colours the level only when asked to', () => {
    const plain = prettyCapture('info', false);
    plain.logger.warn('careful', 'Boot');
    expect(plain.text()).not.toContain('\x1b[');
    const colored = prettyCapture('info', true);
    colored.logger.warn('careful', 'Boot');
    expect(colored.text()).toContain('\x1b[33mWARN \x1b[0m');
  });

  it('passes lines that are not JSON through unchanged', () => {
    expect(formatPretty('not json')).toBe('not json\n');
  });
});

describe('resolveLogFormat', () => {
  it('follows LOG_FORMAT, and the terminal when it is unset or auto', () => {
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('PRETTY', false)).toBe('pretty');
    expect(resolveLogFormat(undefined, true)).toBe('pretty');
    expect(resolveLogFormat('', false)).toBe('json');
    expect(resolveLogFormat('auto', false)).toBe('json');
  });

  it('names the variable and the accepted values for anything else', () => {
    expect(() => resolveLogFormat('fancy', true)).toThrow('LOG_FORMAT must be one of json, pretty, auto, got "fancy"');
  });
});

describe('registerAppLogger', () => {
  it('gives the injected logger of an app the logger bootstrap built for its config', () => {
    const config = {};
    const logger = createLogger('silent');
    expect(appLoggerFor(config)).toBeUndefined();
    registerAppLogger(config, logger);
    expect(appLoggerFor(config)).toBe(logger);
    expect(appLoggerFor({})).toBeUndefined();
    expect(appLoggerFor(undefined)).toBeUndefined();
  });
});

describe('redaction helpers', () => {
  it('leaves objects without secrets untouched (no copy)', () => {
    const fields = { a: 1, b: { c: [1, 2] } };
    expect(scrubSecretFields(fields)).toBe(fields);
  });

  it("does not mutate the caller's object and survives cycles", () => {
    const fields: Record<string, unknown> = { secret: 'x', nested: { token: 'y' } };
    fields.self = fields;
    const clean = scrubSecretFields(fields) as Record<string, any>;
    expect(fields.secret).toBe('x');
    expect(clean.secret).toBe(REDACTED);
    expect(clean.nested.token).toBe(REDACTED);
  });

  it('scrubs key=value secrets and bearer tokens in text, keeping the rest', () => {
    expect(scrubSecretText('/v1/worker/connect?worker_secret=abc&provider=gpu')).toBe('/v1/worker/connect?worker_secret=[redacted]&provider=gpu');
    expect(scrubSecretText('api_key=k1 max_tokens=5 tokens=7')).toBe('api_key=[redacted] max_tokens=5 tokens=7');
    expect(scrubSecretText('Authorization: Bearer sk-abc.def')).toBe('Authorization: Bearer [redacted]');
    expect(scrubSecretText('nothing to see')).toBe('nothing to see');
  });
});
