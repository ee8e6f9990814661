import { GatewayError } from '../common/gateway-error';
import { TenantSettings } from '../config/sections/tenancy';
import { allowedModels, IdentifyingKey, identifyByKey } from './key-identity';

const key = (overrides: Partial<IdentifyingKey> = {}): IdentifyingKey => ({
  id: 'key_1',
  tenant: 'team-a',
  priority: null,
  models: null,
  rpm: null,
  tpm: null,
  ...overrides,
});

const tenants: Record<string, TenantSettings> = { 'team-a': { priority: 'normal', maxPriority: 'normal', models: ['m1', 'm2'] } };
const settingsOf = (t: string) => tenants[t] ?? {};

describe('identifyByKey', () => {
  it("uses the key's tenant, id and limits", () => {
    expect(identifyByKey(key({ rpm: 5, tpm: 0 }), {}, settingsOf)).toEqual({
      tenant: 'team-a',
      priority: 1,
      allowedModels: new Set(['m1', 'm2']),
      keyId: 'key_1',
      keyLimits: { rpm: 5, tpm: 0 },
    });
    expect(identifyByKey(key(), {}, settingsOf)).not.toHaveProperty('keyLimits');
  });

  it("accepts the key's own tenant in x-tenant-id and refuses any other (403 tenant_mismatch)", () => {
    expect(identifyByKey(key(), { 'x-tenant-id': 'team-a' }, settingsOf)).toMatchObject({ tenant: 'team-a' });
    const refused = identifyByKey(key(), { 'x-tenant-id': 'team-b' }, settingsOf) as GatewayError;
    expect(refused).toBeInstanceOf(GatewayError);
    expect(refused.code).toBe('tenant_mismatch');
    expect((identifyByKey(key(), { 'x-tenant-id': 'x'.repeat(65) }, settingsOf) as GatewayError).code).toBe('invalid_request');
  });

  it("takes x-priority, else the key's priority, else the tenant's, capped at the tenant's max_priority", () => {
    expect(identifyByKey(key({ priority: 'low' }), {}, settingsOf)).toMatchObject({ priority: 2 });
    expect(identifyByKey(key({ priority: 'high' }), {}, settingsOf)).toMatchObject({ priority: 1 }); // capped at normal
    expect(identifyByKey(key({ priority: 'low' }), { 'x-priority': 'high' }, settingsOf)).toMatchObject({ priority: 1 });
    expect(identifyByKey(key({ tenant: 'free' }), {}, settingsOf)).toMatchObject({ priority: 1 });
    expect(identifyByKey(key({ tenant: 'free', priority: 'high' }), {}, settingsOf)).toMatchObject({ priority: 0 });
    expect((identifyByKey(key(), { 'x-priority': 'urgent' }, settingsOf) as GatewayError).code).toBe('invalid_request');
  });

  it('allows the models both the key and the tenant allow', () => {
    expect(allowedModels(null, undefined)).toBeUndefined();
    expect(allowedModels(['a'], undefined)).toEqual(new Set(['a']));
    expect(allowedModels(null, ['b'])).toEqual(new Set(['b']));
    expect(allowedModels(['a', 'b'], ['b', 'c'])).toEqual(new Set(['b']));
    expect(allowedModels(['a'], ['c'])).toEqual(new Set());
  });
});
