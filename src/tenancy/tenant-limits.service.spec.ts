import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../../test/support/fake-clock';
import { loadConfig } from '../config';
import { MetricsService } from '../observability/metrics.service';
import { MemoryRateLimiter } from '../rate-limit/memory-rate-limiter';
import { ClientIdentity } from './client-identity';
import { formatDuration, LimitVerdict, TenantLimits } from './tenant-limits.service';
import { TenantsService } from './tenants.service';

describe('TenantLimits (in memory, fake clock)', () => {
  let clock: FakeClock;
  let limits: TenantLimits;
  let limiter: MemoryRateLimiter;

  function setup(tenantsYaml: Record<string, string>) {
    clock = new FakeClock();
    const config = loadConfig(tenantsYaml);
    limiter = new MemoryRateLimiter(clock);
    limits = new TenantLimits(limiter, new TenantsService(config), new MetricsService(), clock);
  }
  afterEach(() => limiter.close());

  const acme: ClientIdentity = { tenant: 'acme', priority: 1 };
  const admit = (id: ClientIdentity = acme) => limits.admit(id) as LimitVerdict;

  it('allows rpm requests a minute, refuses the next with the 429 fields, and recovers', () => {
    setup({ TENANT_RATE_LIMIT_acme: '3req/min' });
    for (let i = 0; i < 3; i++) expect(admit().error).toBeUndefined();
    const refused = admit();
    expect(refused.error).toMatchObject({ code: 'rate_limit_exceeded', details: { retryAfterMs: 20_000, fields: { limit: 3, remaining: 0 } } });
    expect(refused.headers).toMatchObject({ 'x-ratelimit-limit-requests': '3', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '1m0s' });
    clock.advance(20_000);
    expect(admit().error).toBeUndefined();
  });

  it('counts tokens when requests end: a window over its token limit refuses the next request', () => {
    setup({ TENANT_RATE_LIMIT_acme: '100tok/min' });
    expect(admit().error).toBeUndefined(); // checking costs no tokens
    limits.chargeTokens(acme, 150);
    const refused = admit();
    expect(refused.error?.code).toBe('rate_limit_exceeded');
    expect(refused.headers['x-ratelimit-limit-tokens']).toBe('100');
    clock.advance(29_000); // 48 tokens drained: still over the limit
    expect(admit().error).toBeDefined();
    clock.advance(1_000); // back at the limit: a new request may start
    expect(admit().error).toBeUndefined();
  });

  it('a daily budget answers budget_exceeded', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-limits-'));
    writeFileSync(join(dir, 'c.yaml'), 'tenants:\n  acme: {tokens_per_day: 1000}\n');
    setup({ CONFIG_FILE: join(dir, 'c.yaml') });
    limits.chargeTokens(acme, 1001);
    expect(admit().error?.code).toBe('budget_exceeded');
  });

  it("a key's own limits apply beside its tenant's", () => {
    setup({ TENANT_RATE_LIMIT_acme: '100req/min' });
    const key: ClientIdentity = { ...acme, keyId: 'k1', keyLimits: { rpm: 1 } };
    expect(admit(key).error).toBeUndefined();
    expect(admit(key).error?.code).toBe('rate_limit_exceeded');
    expect(admit(acme).error).toBeUndefined(); // the tenant still has room
  });

  it("a key held at its own limit does not spend its tenant's allowance (the tenant's other keys keep it)", () => {
    setup({ TENANT_RATE_LIMIT_acme: '10req/min' });
    const throttled: ClientIdentity = { ...acme, keyId: 'k-low', keyLimits: { rpm: 1 } };
    const sibling: ClientIdentity = { ...acme, keyId: 'k-other' };
    for (let i = 0; i < 10; i++) admit(throttled);
    for (let i = 0; i < 9; i++) expect(admit(sibling).error).toBeUndefined();
    expect(admit(sibling).error?.code).toBe('rate_limit_exceeded');
  });

    it('sends no rate-limit headers when no limit applies', () => {
    setup({});
    expect(admit()).toEqual({ headers: {} });
  });

  it('writes durations like OpenAI', () => {
    expect([formatDuration(850), formatDuration(1500), formatDuration(60_000), formatDuration(361_000)]).toEqual(['850ms', '1.5s', '1m0s', '6m1s']);
  });
});
