import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
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

  it("TENANT_RATE_LIMIT_default (the seed's spelling) is the fallback for tenants without an entry, like DEFAULT_RATE_LIMIT", () => {
    for (const name of ['TENANT_RATE_LIMIT_default', 'DEFAULT_RATE_LIMIT']) {
      setup({ [name]: '2req/min', TENANT_RATE_LIMIT_big: '5req/min' });
      for (let i = 0; i < 2; i++) expect(admit().error).toBeUndefined();
      expect(admit().error).toMatchObject({ code: 'rate_limit_exceeded', details: { fields: { limit: 2 } } });
      for (let i = 0; i < 5; i++) expect(admit({ tenant: 'big', priority: 1 }).error).toBeUndefined();
      limiter.close();
    }
    const config = loadConfig({ TENANT_RATE_LIMIT_default: '2req/min' });
    expect(config.tenancy.tenants.has('default')).toBe(false);
    expect(config.tenancy.defaults).toEqual({ rpm: 2 });
    expect(() => loadConfig({ TENANT_RATE_LIMIT_default: '2req/min', DEFAULT_RATE_LIMIT: '3req/min' })).toThrow(/synonyms/);
    expect(loadConfig({ TENANT_RATE_LIMIT_default: '2req/min', DEFAULT_RATE_LIMIT: '2req/min' }).tenancy.defaults).toEqual({ rpm: 2 });
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

  it('a worker reporting 1e8 tokens once costs the tenant one window, not 24 h (issue 16 review), and is logged naming the worker, once a minute', () => {
    setup({ TENANT_RATE_LIMIT_acme: '1000tok/min' });
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const liar = { id: 'w-liar', name: 'gpu-7', provider: 'p2' };
      expect(admit().error).toBeUndefined();
      // The codec's bound on one count is 1e8; a sum of prompt and completion may be twice that.
      limits.chargeTokens(acme, 100_000_000, liar);
      const refused = admit();
      expect(refused.error?.code).toBe('rate_limit_exceeded');
      expect(refused.error?.details).toMatchObject({ retryAfterMs: 60_000 });
      clock.advance(59_000);
      expect(admit().error?.code).toBe('rate_limit_exceeded');
      clock.advance(1_000); // one window after the report: admitted again
      expect(admit().error).toBeUndefined();

      const clampLines = () => warn.mock.calls.map((c) => String(c[0])).filter((l) => l.includes('w-liar'));
      expect(clampLines()).toHaveLength(1);
      expect(clampLines()[0]).toMatch(
        /worker w-liar \(gpu-7, provider "p2"\) reported 100000000 tokens for a request of tenant acme: charged 2000 to tpm:tenant:acme/,
      );
      for (let i = 0; i < 5; i++) limits.chargeTokens(acme, 200_000_000, liar);
      expect(clampLines()).toHaveLength(2); // rate-limited: one line a minute, not a line per request
      clock.advance(60_000);
      limits.chargeTokens(acme, 200_000_000, liar);
      expect(clampLines()).toHaveLength(3);
      expect(clampLines()[2]).toMatch(/and 4 more such report\(s\)/);
      // An honest report within a window of debt is charged in full and not logged.
      setup({ TENANT_RATE_LIMIT_acme: '1000tok/min' });
      limits.chargeTokens(acme, 1500, { id: 'w-honest' });
      expect(warn.mock.calls.some((c) => String(c[0]).includes('w-honest'))).toBe(false);
      expect((admit().error?.details as { retryAfterMs: number }).retryAfterMs).toBe(30_000);
    } finally {
      warn.mockRestore();
    }
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
