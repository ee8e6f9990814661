import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { BuiltPackage, buildPackage } from '../cli/built-package';
import { chat, eventually, post, sleep } from '../support/http';
import { autoRespond } from '../support/routing';
import { ScriptedWorker } from '../support/scripted-worker';
import { SHARED_REDIS_URL } from '../rate-limit/support';
import { errorLines, GatewayProcess, startGatewayProcess } from './process-support';

/**
 * Issue 16, "a malicious-worker fuzz suite": against the real compiled gateway process, a hostile
 * worker sends every worker → gateway frame type with boundary and absurd values (huge, negative,
 * fractional, 1e400, NaN-like strings, wrong types, deeply nested objects, unknown ids), and answers
 * the requests it is given with absurd token counts, reconnecting whenever the gateway closes its
 * session. Meanwhile a normal tenant's traffic runs through a well-behaved worker. The process must
 * never exit nor log an uncaught error, the normal tenant must see no failure, the tenant whose
 * requests the hostile worker serves must always get an answer, and every limiter must still answer.
 */

// Sentinels replaced in the frame text: JSON.stringify cannot write 1e400 or 5,000 levels of nesting.
const INF = '__INF__';
const DEEP = '__DEEP__';
const rawFrame = (frame: unknown) =>
  JSON.stringify(frame)
    .replaceAll(`"${INF}"`, '1e400')
    .replaceAll(`"${DEEP}"`, `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`);

const absurdNumber = fc.oneof(
  // 9007199254740993 is 2^53 + 1 on purpose: it cannot be represented, the codec must clamp what it reads.
  // eslint-disable-next-line no-loss-of-precision
  fc.constantFrom(9e15, 9007199254740993, -1, -9e15, 0.5, 1.0000001, 1e21, 1e308, -1e308, -0, 2 ** 31, 2 ** 32 + 1, 0, 1, 599, 600, 99),
  fc.constant(INF),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);
const absurd = fc.oneof(
  { weight: 5, arbitrary: absurdNumber },
  { weight: 2, arbitrary: fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e400', '9e15', '', '-1', '0x10', null, true, false, [], {}) },
  { weight: 1, arbitrary: fc.constant(DEEP) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 3 });
/** Never a model the normal tenant uses: the hostile worker must not be handed its traffic. */
const models = fc.constantFrom<unknown>(['evil-model'], ['evil-model', 'x'.repeat(300), ''], 'evil-model', [7], [], null, DEEP);

type Id = { real: boolean; fake: string };
const requestId = fc.record({ real: fc.boolean(), fake: fc.oneof(fc.string({ maxLength: 8 }), fc.constant('r-' + 'x'.repeat(2000))) });

const frameArb = fc.oneof(
  fc.record({
    type: fc.constant('register'),
    worker_name: fc.oneof(fc.string(), absurd),
    models,
    max_concurrent: absurd,
    current_load: maybe(absurd),
    priority: maybe(absurd),
    protocol_version: maybe(fc.constantFrom('2026-04-bridge-v1', 'v0')),
    capabilities: maybe(fc.record({ 'evil-model': fc.record({ context_length: absurd, vision: absurd }) })),
    runner_capabilities: maybe(absurd),
  }),
  fc.record({ type: fc.constant('pong'), current_load: absurd, timestamp_unix_ms: maybe(absurd) }),
  fc.record({
    type: fc.constant('models_update'),
    models,
    current_load: maybe(absurd),
    priority: maybe(absurd),
    capabilities: maybe(fc.record({ 'evil-model': fc.record({ context_length: absurd }) })),
    endpoints: maybe(absurd),
  }),
  fc.record({ type: fc.constant('response_chunk'), request_id: requestId, chunk: fc.oneof(fc.string(), absurd) }),
  fc.record({
    type: fc.constant('response_start'),
    request_id: requestId,
    status_code: absurd,
    headers: maybe(fc.oneof(absurd, fc.dictionary(fc.string({ maxLength: 10 }), fc.oneof(fc.string(), absurd)))),
  }),
  fc.record({
    type: fc.constant('response_complete'),
    request_id: requestId,
    status_code: fc.oneof(fc.constantFrom(200, 429, 500, 503), absurd),
    headers: maybe(
      fc.oneof(
        absurd,
        fc.dictionary(
          fc.constantFrom('retry-after', 'x-ratelimit-reset-tokens', 'content-length', 'content-type', 'set-cookie'),
          fc.oneof(fc.string(), absurd),
        ),
      ),
    ),
    body: maybe(fc.oneof(fc.string(), absurd)),
    token_counts: maybe(fc.oneof(absurd, fc.record({ prompt_tokens: maybe(absurd), completion_tokens: maybe(absurd), total_tokens: maybe(absurd) }))),
  }),
  fc.record({
    type: fc.constant('error'),
    request_id: maybe(requestId),
    code: fc.oneof(fc.constantFrom('backend_unavailable', 'x'.repeat(5000)), absurd),
    message: fc.oneof(fc.string(), absurd),
  }),
  fc.record({
    type: fc.constant('lifecycle_status'),
    task_id: fc.oneof(fc.string({ maxLength: 8 }), absurd),
    status: fc.oneof(fc.constantFrom('accepted', 'loading', 'completed', 'failed', 'unsupported'), absurd),
    progress: maybe(absurd),
    eta_secs: maybe(absurd),
    gpu_memory_used_mb: maybe(absurd),
    gpu_memory_freed_mb: maybe(absurd),
    entries_removed: maybe(absurd),
    memory_freed_mb: maybe(absurd),
    error: maybe(absurd),
  }),
  fc.record({ type: fc.oneof(fc.constantFrom('hello', 'register_ack', 'request', ''), absurd) }),
);

/** The hostile worker: reconnects whenever the gateway closes it, and keeps the ids of the requests it holds. */
class HostileWorker {
  worker: ScriptedWorker | undefined;
  readonly held: string[] = [];
  sessions = 0;
  constructor(private readonly url: string) {}

  async ensure(): Promise<ScriptedWorker> {
    if (this.worker && this.worker.closeState === undefined && this.worker.ws.readyState === this.worker.ws.OPEN) return this.worker;
    const { worker } = await ScriptedWorker.register(this.url, {
      models: ['evil-model'],
      max_concurrent: 64,
      features: ['response_start', 'model_lifecycle', 'cancel_reasons'],
    });
    this.sessions++;
    worker.ws.on('message', (data) => {
      const f = JSON.parse(data.toString());
      if (f.type === 'request') this.held.push(f.request_id);
    });
    this.worker = worker;
    return worker;
  }

  async send(frame: Record<string, unknown> & { request_id?: Id }): Promise<void> {
    const w = await this.ensure();
    const out: Record<string, unknown> = { ...frame };
    if (frame.request_id && typeof frame.request_id === 'object')
      out.request_id = frame.request_id.real && this.held.length ? this.held[0] : frame.request_id.fake;
    if (w.ws.readyState === w.ws.OPEN) w.send(rawFrame(out));
  }

  /** Answers everything it holds with a 200 and an absurd token count (the H1 report). */
  async answerHeld(tokens: string): Promise<void> {
    const w = await this.ensure();
    for (const id of this.held.splice(0)) {
      w.send(
        `{"type":"response_complete","request_id":${JSON.stringify(id)},"status_code":200,"body":"{}","token_counts":{"total_tokens":${tokens},"prompt_tokens":${tokens}}}`,
      );
    }
  }
}

const buildOnce = (() => {
  let pkg: BuiltPackage | undefined;
  return () => (pkg ??= buildPackage());
})();

describe.each([
  ['in memory', {}],
  ['with REDIS_URL (limits in Redis)', { REDIS_URL: SHARED_REDIS_URL }],
])('a malicious worker, fuzzed (%s)', (_label, extraEnv: Record<string, string>) => {
  const id = randomUUID().slice(0, 8);
  const good = `fz-good-${id}`;
  const victim = `fz-victim-${id}`;
  const rpm = `fz-rpm-${id}`;
  let gw: GatewayProcess;
  let honest: ScriptedWorker;
  beforeAll(async () => {
    const pkg = buildOnce();
    gw = await startGatewayProcess(pkg, {
      ...extraEnv,
      [`TENANT_RATE_LIMIT_${good}`]: '100000req/min,1000000000tok/min',
      [`TENANT_RATE_LIMIT_${victim}`]: '1000tok/min',
      [`TENANT_RATE_LIMIT_${rpm}`]: '2req/min',
      // A request the hostile worker drops is answered within seconds, not minutes.
      QUEUE_TIMEOUT_SECS: '5',
      REQUEST_TIMEOUT_SECS: '10',
      MAX_QUEUE_LEN: '1000',
    });
    if (extraEnv.REDIS_URL) await eventually(async () => ((await (await fetch(`${gw.url}/health`)).json()) as any).redis?.status === 'ok', 15_000);
    ({ worker: honest } = await ScriptedWorker.register(gw.workerUrl, { models: ['good-model'], max_concurrent: 64 }));
    autoRespond(honest, {
      id: 'ok',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'fine' }, finish_reason: 'stop' }],
    });
  }, 300_000);
  afterAll(async () => {
    honest?.close();
    await gw?.remove();
  });

  it('never exits nor logs an uncaught error; the normal tenant sees no failure; every limiter still answers', async () => {
    const hostile = new HostileWorker(gw.workerUrl);
    await hostile.ensure();
    let fuzzing = true;
    const goodStatuses: number[] = [];
    const victimOutcomes: Array<number | string> = [];
    const goodTraffic = Array.from({ length: 2 }, async () => {
      while (fuzzing) {
        const res = await post(gw.url, '/v1/chat/completions', chat('good-model'), { 'x-tenant-id': good }, AbortSignal.timeout(15_000)).catch((e: Error) => ({
          status: -1,
          json: e.message,
        }));
        goodStatuses.push(res.status);
        if (res.status === 200) expect(res.json.choices[0].message.content).toBe('fine');
      }
    });
    const victimTraffic = (async () => {
      while (fuzzing) {
        const res = await post(gw.url, '/v1/chat/completions', chat('evil-model'), { 'x-tenant-id': victim }, AbortSignal.timeout(60_000)).catch(
          (e: Error) => ({ status: `no answer: ${e.message}`, headers: undefined }),
        );
        victimOutcomes.push(res.status);
        await sleep(50);
      }
    })();

    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(frameArb, { minLength: 1, maxLength: 12 }),
          fc.constantFrom('9000000000000000', '1e400', '-5', '0.5', '"NaN"'),
          async (frames, tokens) => {
            for (const frame of frames) {
              await hostile.send(frame as Record<string, unknown> & { request_id?: Id });
              await sleep(2);
            }
            await hostile.answerHeld(tokens);
            expect(gw.run.child.exitCode).toBeNull();
          },
        ),
        { numRuns: 150, interruptAfterTimeLimit: 45_000, seed: Number.parseInt(id, 16) },
      );
      await sleep(500);
    } finally {
      fuzzing = false;
      await Promise.all([...goodTraffic, victimTraffic]);
    }

    // The process never went away and logged nothing uncaught (the last-resort handlers stayed idle).
    expect(gw.run.child.exitCode).toBeNull();
    expect(gw.run.child.signalCode).toBeNull();
    const uncaught = errorLines(gw.run).filter((l) => /unhandled promise rejection|uncaught exception|Invalid time value/.test(l));
    expect(uncaught).toEqual([]);
    expect(hostile.sessions).toBeGreaterThan(1); // the fuzz did get sessions closed, and came back

    // The normal tenant: every request succeeded.
    expect(goodStatuses.length).toBeGreaterThan(5);
    expect(goodStatuses.filter((s) => s !== 200)).toEqual([]);
    // The tenant the hostile worker served: always answered (whatever the worker made of it).
    expect(victimOutcomes.length).toBeGreaterThan(0);
    expect(victimOutcomes.filter((s) => typeof s !== 'number')).toEqual([]);
    // Its absurd charges put it over its token limit: refused with an answer, not left hanging.
    expect(victimOutcomes).toContain(429);

    // Every limiter still answers: the token-limited tenant (charged absurd counts), and a request limit.
    const last = await post(gw.url, '/v1/chat/completions', chat('good-model'), { 'x-tenant-id': victim }, AbortSignal.timeout(10_000));
    expect([200, 429]).toContain(last.status);
    if (last.status === 429) {
      const retryAfter = Number(last.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60 + 24 * 3600);
    }
    const limited = [];
    for (let i = 0; i < 3; i++)
      limited.push((await post(gw.url, '/v1/chat/completions', chat('good-model'), { 'x-tenant-id': rpm }, AbortSignal.timeout(10_000))).status);
    expect(limited).toEqual([200, 200, 429]);
    expect((await fetch(`${gw.url}/health/ready`)).status).toBe(200);
    hostile.worker?.close();
  }, 240_000);
});

afterAll(() => {
  // The compiled package is shared by both variants.
  buildOnce().remove();
});
