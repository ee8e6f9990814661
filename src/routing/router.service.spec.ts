import { FakeClock } from '../../test/support/fake-clock';
import { loadConfig } from '../config';
import { GatewayError } from '../common/gateway-error';
import { ModelCapabilities } from '../protocol';
import { ProviderRecord, ProviderStore } from '../providers/provider-store';
import { ProvidersService } from '../providers/providers.service';
import { WorkerChannel, WorkerSession } from '../fleet/worker-session';
import { Fleet } from '../fleet/fleet.service';
import { WorkerIndex } from '../fleet/worker-index';
import { LifecycleState } from '../observability/lifecycle-state';
import { WorkerRecords } from '../registry/worker-records.port';
import { MetricsService } from '../observability/metrics.service';
import { extractRequirements } from './requirements';
import { RouteDecision, RoutePlan, Router } from './router.service';

class MemoryStore extends ProviderStore {
  async loadAll(): Promise<ProviderRecord[]> {
    return [];
  }
  async save(): Promise<void> {}
  async delete(): Promise<void> {}
}

class Records extends WorkerRecords {
  known = new Set<string>();
  recordConnected() {}
  recordModels() {}
  recordHeartbeat() {}
  recordDisconnected() {}
  recentlyKnowsModel(_provider: string, model: string) {
    return this.known.has(model);
  }
}

const channel: WorkerChannel = { send() {}, close() {} };

describe('Router', () => {
  let clock: FakeClock;
  let registry: WorkerIndex;
  let fleet: Fleet;
  let providers: ProvidersService;
  let records: Records;
  let router: Router;
  let seq = 0;

  async function setup(env: Record<string, string> = {}) {
    clock = new FakeClock();
    const config = loadConfig({
      ROUTING_ALIASES: 'gpt-4=llama3:70b,claude-3-opus=opus-local',
      ROUTING_FALLBACKS: 'llama3:70b=llama3:8b,mistral:7b;opus-local=gpt-4',
      ...env,
    });
    providers = new ProvidersService(config, new MemoryStore());
    await providers.onModuleInit();
    records = new Records();
    const metrics = new MetricsService();
    fleet = new Fleet(config, clock, records, metrics, new LifecycleState());
    registry = fleet.sessions;
    router = new Router(config, clock, providers, fleet, records, metrics);
  }

  function worker(
    models: string[],
    opts: { provider?: string; caps?: Record<string, ModelCapabilities>; endpoints?: string[]; priority?: number; slots?: number; name?: string } = {},
  ): WorkerSession {
    const id = `w-${++seq}`;
    const w = new WorkerSession(
      {
        id,
        provider: opts.provider ?? 'local',
        name: opts.name ?? id,
        models,
        maxConcurrent: opts.slots ?? 1,
        remoteAddress: '127.0.0.1',
        connectedAt: clock.now(),
        capabilities: opts.caps,
        endpoints: opts.endpoints,
        declaredPriority: opts.priority,
      },
      channel,
    );
    fleet.attach(w);
    return w;
  }

  function plan(model: string, body: Record<string, unknown> = {}, pin?: string, endpoint = '/v1/chat/completions'): RoutePlan {
    const p = router.plan({ model, requirements: extractRequirements(endpoint, body), pin });
    if (p instanceof GatewayError) throw p;
    return p;
  }

  const route = (model: string, body: Record<string, unknown> = {}, endpoint?: string): RouteDecision => router.route(plan(model, body, undefined, endpoint));
  const vision = { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] };
  const tools = { tools: [{ type: 'function' }] };

  beforeEach(() => setup());

  it('routes to a worker serving the exact model or *, and 404s a model nobody knows (US-01)', () => {
    const a = worker(['llama3:8b']);
    worker(['mistral:7b']);
    expect(route('llama3:8b')).toEqual({ kind: 'assign', worker: a, model: 'llama3:8b' });
    expect(route('gpt-5')).toMatchObject({ kind: 'reject', error: { code: 'model_not_found', message: "Model 'gpt-5' not found" } });
    const any = worker(['*']);
    expect(route('gpt-5')).toEqual({ kind: 'assign', worker: any, model: 'gpt-5' });
  });

  it('filters by capabilities and names every missing one (US-02, AC-03..05)', () => {
    const plain = worker(['llama3'], { caps: { llama3: { vision: false, tools: false, context_length: 10 } } });
    const llava = worker(['llava'], { caps: { llava: { vision: true } } });
    expect(route('llava', vision)).toMatchObject({ kind: 'assign', worker: llava });
    const err = route('llama3', {
      ...vision,
      ...tools,
      messages: [{ role: 'user', content: [{ type: 'image_url' }, { type: 'text', text: 'x'.repeat(100) }] }],
    });
    expect(err).toMatchObject({
      kind: 'reject',
      error: { code: 'capability_mismatch', details: { fields: { missing: ['vision', 'tools', 'context_length'] } } },
    });
    expect(route('llama3', { messages: [{ role: 'user', content: 'short' }] })).toMatchObject({ kind: 'assign', worker: plain });
  });

  it('an undeclared capability counts as supported; an absent endpoint excludes', () => {
    const w = worker(['m'], { endpoints: ['/v1/chat/completions'] });
    expect(route('m', { ...vision, ...tools })).toMatchObject({ kind: 'assign', worker: w });
    expect(route('m', { input: 'x' }, '/v1/embeddings')).toMatchObject({
      error: { code: 'capability_mismatch', details: { fields: { missing: ['/v1/embeddings'] } } },
    });
  });

  it("the provider's declarations override the worker's", async () => {
    await providers.update('local', { capabilities: { m: { vision: true } }, priority: 3 });
    const w = worker(['m'], { caps: { m: { vision: false } }, priority: 1 });
    expect(route('m', vision)).toMatchObject({ kind: 'assign', worker: w });
    // The provider's priority is a floor: a worker's claim never ranks it above (hardening H2).
    expect(router.priorityOf(w)).toBe(3);
    // Without a configured priority the workers rank themselves (the spec's priority_only story).
    await providers.update('local', { priority: null });
    expect(router.priorityOf(w)).toBe(1);
    w.declaredPriority = 90;
    expect(router.priorityOf(w)).toBe(90);
  });

  it("snapshotOf: the worker as plain data with routing's view of its health", () => {
    const w = worker(['m']);
    router.firstByte(w, 120);
    router.failed(w, 'http_500');
    const data = router.snapshotOf(w);
    expect(data).toMatchObject({ id: w.id, models: ['m'], health: { consecutive_failures: 1, ejected_until: 0, latency_ms: expect.any(Number) } });
    expect(JSON.parse(JSON.stringify(data))).toEqual(data);
  });

  it('queues when eligible workers are all busy, and does not fall back then (US-05)', () => {
    const big = worker(['llama3:70b']);
    worker(['llama3:8b']);
    fleet.reserve(big, 'r', 'llama3:70b');
    expect(route('llama3:70b')).toMatchObject({ kind: 'queue', model: 'llama3:70b', provider: { name: 'local' } });
  });

  it('resolves aliases and walks the fallback chain of the alias target (US-04, US-05)', () => {
    const small = worker(['mistral:7b']);
    const d = route('gpt-4');
    expect(d).toEqual({ kind: 'assign', worker: small, model: 'mistral:7b' });
    expect(plan('gpt-4').candidates).toEqual(['llama3:70b', 'llama3:8b', 'mistral:7b']);
  });

  it('an alias applies only when the requested name has no candidates: a worker advertising the alias name gets it (router seed step 5a)', () => {
    const target = worker(['llama3:70b']);
    expect(route('gpt-4')).toEqual({ kind: 'assign', worker: target, model: 'llama3:70b' });
    const own = worker(['gpt-4'], { caps: { 'gpt-4': { vision: false } } });
    expect(route('gpt-4')).toEqual({ kind: 'assign', worker: own, model: 'gpt-4' });
    expect(plan('gpt-4')).toMatchObject({ target: 'gpt-4', candidates: ['gpt-4'] });
    // Busy, it is still the candidate: the request waits for it.
    fleet.reserve(own, 'r1', 'gpt-4');
    expect(route('gpt-4')).toMatchObject({ kind: 'queue', model: 'gpt-4' });
    // A worker that cannot take the request (capabilities, draining) is no candidate: the alias applies.
    expect(route('gpt-4', vision)).toEqual({ kind: 'assign', worker: target, model: 'llama3:70b' });
    own.draining = true;
    expect(route('gpt-4')).toEqual({ kind: 'assign', worker: target, model: 'llama3:70b' });
  });

  it('a fallback that is an alias resolves to its target, once', () => {
    expect(plan('claude-3-opus').candidates).toEqual(['opus-local', 'llama3:70b']);
  });

  it('503 fallback_exhausted lists the attempted models (and missing capabilities when they were the reason)', () => {
    expect(route('llama3:70b')).toMatchObject({
      kind: 'reject',
      error: { code: 'fallback_exhausted', details: { fields: { attempted_models: ['llama3:70b', 'llama3:8b', 'mistral:7b'] } } },
    });
    worker(['mistral:7b'], { caps: { 'mistral:7b': { vision: false } } });
    expect(route('gpt-4', vision)).toMatchObject({ error: { code: 'fallback_exhausted', details: { fields: { missing: ['vision'] } } } });
  });

  it('404 for an alias whose target nobody serves names both', async () => {
    await setup({ ROUTING_ALIASES: 'gpt-4=llama3:70b', ROUTING_FALLBACKS: '' });
    expect(route('gpt-4')).toMatchObject({ error: { code: 'model_not_found', message: expect.stringMatching(/gpt-4.*llama3:70b/) } });
  });

  it('a caller restricted to some models gets 403 model_not_allowed for others (after alias resolution), and only allowed fallbacks', () => {
    const requirements = extractRequirements('/v1/chat/completions', {});
    const allowedModels = new Set(['llama3:70b', 'mistral:7b']);
    expect(router.plan({ model: 'gpt-4', requirements, allowedModels })).toMatchObject({ candidates: ['llama3:70b', 'mistral:7b'] });
    expect(router.plan({ model: 'llama3:8b', requirements, allowedModels })).toMatchObject({ code: 'model_not_allowed' });
  });

  it('a known model without live workers queues at the provider that knows it', () => {
    records.known.add('later');
    expect(route('later')).toMatchObject({ kind: 'queue', model: 'later', provider: { name: 'local' } });
  });

  it('503 no_healthy_worker with a retry hint when the only workers are ejected or draining (AC-02)', () => {
    const w = worker(['m'], { name: 'flaky' });
    for (let i = 0; i < 3; i++) router.failed(w, 'worker_error');
    clock.advance(1000);
    expect(route('m')).toMatchObject({ kind: 'reject', error: { code: 'no_healthy_worker', details: { retryAfterMs: 29_000 } } });
    clock.advance(29_000);
    expect(route('m')).toMatchObject({ kind: 'assign', worker: w });
    w.draining = true;
    expect(route('m')).toMatchObject({ error: { code: 'no_healthy_worker' } });
  });

  it('a worker silent past the heartbeat timeout gets no new work', () => {
    const w = worker(['m']);
    clock.advance(45_001);
    expect(route('m')).toMatchObject({ error: { code: 'no_healthy_worker' } });
    w.lastSeenAt = clock.now();
    expect(route('m')).toMatchObject({ kind: 'assign', worker: w });
  });

  describe('pinning', () => {
    beforeEach(async () => {
      await providers.create({ name: 'east' });
      await providers.create({ name: 'off', enabled: false });
    });

    it('routes only within the pinned provider, never falling back to another', () => {
      worker(['m']);
      const east = worker(['m'], { provider: 'east' });
      expect(router.route(plan('m', {}, 'east'))).toMatchObject({ kind: 'assign', worker: east });
      fleet.reserve(east, 'r', 'm');
      expect(router.route(plan('m', {}, 'east'))).toMatchObject({ kind: 'queue', provider: { name: 'east' } });
      expect(router.route(plan('other', {}, 'east'))).toMatchObject({ error: { code: 'pool_unready' } });
    });

    it('unknown → 400 invalid_params, disabled → 503 pool_unready, capability gap → 400', () => {
      expect(router.plan({ model: 'm', requirements: extractRequirements('/v1/chat/completions', {}), pin: 'nope' })).toMatchObject({ code: 'invalid_params' });
      expect(router.plan({ model: 'm', requirements: extractRequirements('/v1/chat/completions', {}), pin: 'off' })).toMatchObject({ code: 'pool_unready' });
      worker(['m'], { provider: 'east', caps: { m: { tools: false } } });
      expect(router.route(plan('m', tools, 'east'))).toMatchObject({ error: { code: 'capability_mismatch' } });
    });

    it('is refused when routing.allow_pinning is false', async () => {
      await setup({ ROUTING_ALLOW_PINNING: 'false' });
      expect(router.plan({ model: 'm', requirements: extractRequirements('/v1/chat/completions', {}), pin: 'local' })).toMatchObject({
        code: 'invalid_params',
      });
    });
  });

  it('the pull path applies the same filters: pin, capabilities, health, avoided workers', async () => {
    await providers.create({ name: 'east' });
    const w = worker(['m'], { caps: { m: { vision: false } } });
    expect(router.canServe(w, plan('m'), 'm')).toBe(true);
    expect(router.canServe(w, plan('m', vision), 'm')).toBe(false);
    expect(router.canServe(w, plan('m', {}, 'east'), 'm')).toBe(false);
    const avoiding = plan('m');
    avoiding.avoid = new Set([w.id]);
    expect(router.canServe(w, avoiding, 'm')).toBe(false);
    w.draining = true;
    expect(router.canServe(w, plan('m'), 'm')).toBe(false);
  });

  it('/v1/models lists served models and the aliases pointing at them', () => {
    worker(['llama3:70b']);
    const draining = worker(['hidden']);
    draining.draining = true;
    expect(
      router
        .listModels()
        .map((m) => m.id)
        .sort(),
    ).toEqual(['gpt-4', 'llama3:70b']);
    worker(['*']); // serves every alias target
    expect(
      router
        .listModels()
        .map((m) => m.id)
        .sort(),
    ).toEqual(['claude-3-opus', 'gpt-4', 'llama3:70b']);
  });

  it('a model held out of routing on a worker (an unload draining it) reaches that worker no more, exact or through *, until released', () => {
    const exact = worker(['m', 'n'], { name: 'exact' });
    const star = worker(['*'], { name: 'star' });
    registry.holdOut(exact, 'm');
    registry.holdOut(star, 'm');
    records.known.add('m'); // its worker records know it: requests wait instead of 404
    expect(route('m').kind).toBe('queue');
    expect(router.canServe(exact, plan('m'), 'm')).toBe(false);
    expect(router.canServe(star, plan('m'), 'm')).toBe(false);
    expect(router.canServe(exact, plan('n'), 'n')).toBe(true);
    // A models_update meanwhile keeps the hold.
    registry.setModels(exact, ['m', 'n', 'o']);
    expect(registry.servingExactly('m').size).toBe(0);
    expect([...registry.servingExactly('o')]).toEqual([exact]);
    registry.releaseHold(exact, 'm');
    const released = route('m');
    expect(released.kind === 'assign' && released.worker.name).toBe('exact'); // star still holds it out
    registry.releaseHold(star, 'm');
    expect(router.canServe(star, plan('m'), 'm')).toBe(true);
  });
  describe('translation (issue 20)', () => {
    const CHAT = ['/v1/chat/completions'];
    const NATIVE = ['/v1/chat/completions', '/v1/messages'];
    const messages = { messages: [{ role: 'user', content: 'hi' }] };
    function translatable(model: string): RoutePlan {
      const requirements = extractRequirements('/v1/messages', messages);
      const p = router.plan({
        model,
        requirements,
        translation: { kind: 'anthropic-messages', requirements: { ...requirements, endpoint: '/v1/chat/completions' } },
      });
      if (p instanceof GatewayError) throw p;
      return p;
    }

    it('prefers a worker serving the endpoint natively, and translates only when none is eligible', () => {
      const chat = worker(['m'], { endpoints: CHAT, name: 'chat' });
      const p = translatable('m');
      expect(router.route(p)).toMatchObject({ kind: 'assign', worker: chat });
      expect(p.translated).toBe('anthropic-messages');
      expect(p.requirements.endpoint).toBe('/v1/chat/completions');
      const native = worker(['m'], { endpoints: NATIVE, name: 'native' });
      expect(router.route(p)).toMatchObject({ kind: 'assign', worker: native });
      expect(p.translated).toBeUndefined();
      expect(p.requirements.endpoint).toBe('/v1/messages');
      // A busy native worker is still eligible: the request waits for it rather than being translated.
      fleet.reserve(native, 'r', 'm');
      expect(router.route(p)).toMatchObject({ kind: 'queue', model: 'm' });
      expect(p.translated).toBeUndefined();
    });

    it('the model asked for, translated, comes before a fallback served natively', async () => {
      await setup({ ROUTING_FALLBACKS: 'm=alt' });
      const chat = worker(['m'], { endpoints: CHAT });
      worker(['alt'], { endpoints: NATIVE });
      const p = translatable('m');
      expect(router.route(p)).toMatchObject({ kind: 'assign', worker: chat, model: 'm' });
      expect(p.translated).toBe('anthropic-messages');
    });

    it('without a translation the endpoint stays missing; `never`, globally or per pool, refuses translation', async () => {
      worker(['m'], { endpoints: CHAT });
      expect(route('m', messages, '/v1/messages')).toMatchObject({
        error: { code: 'capability_mismatch', details: { fields: { missing: ['/v1/messages'] } } },
      });
      await providers.update('local', { translation: 'never' });
      expect(router.route(translatable('m'))).toMatchObject({ kind: 'reject', error: { code: 'capability_mismatch' } });
      await setup({ ROUTING_TRANSLATION: 'never' });
      const w = worker(['m'], { endpoints: CHAT });
      expect(router.route(translatable('m'))).toMatchObject({ kind: 'reject' });
      // The pool's own `auto` wins over the gateway's `never`.
      await providers.update('local', { translation: 'auto' });
      const p = translatable('m');
      expect(router.route(p)).toMatchObject({ kind: 'assign', worker: w });
      expect(router.canServe(w, p, 'm')).toBe(true);
      await providers.update('local', { translation: null });
      expect(router.canServe(w, p, 'm')).toBe(false);
    });
  });

  it('an alias ending in * matches every name it prefixes; an exact alias wins, the longest prefix next, and patterns are not listed', async () => {
    await setup({ ROUTING_ALIASES: 'claude-*=coder,claude-haiku-*=small,claude-opus-4-1=big' });
    worker(['coder', 'small', 'big']);
    expect(route('claude-sonnet-4-5-20250929')).toMatchObject({ kind: 'assign', model: 'coder' });
    expect(route('claude-haiku-4-5')).toMatchObject({ kind: 'assign', model: 'small' });
    expect(route('claude-opus-4-1')).toMatchObject({ kind: 'assign', model: 'big' });
    expect(route('gpt-5')).toMatchObject({ kind: 'reject' });
    expect(router.listModels().map((m) => m.id)).not.toContain('claude-*');
    expect(router.listModels().map((m) => m.id)).toContain('claude-opus-4-1');
  });
});
