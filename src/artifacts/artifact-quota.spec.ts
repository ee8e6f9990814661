import { GatewayError } from '../common/gateway-error';
import { ArtifactQuota } from './artifact-quota';

describe('ArtifactQuota', () => {
  it('refuses what would take the tenant past its quota, counting artifacts still being written', async () => {
    const stored = new Map<string, number>();
    let answer!: () => void;
    const slowStore = (tenant: string) => new Promise<number>((resolve) => (answer = () => resolve(stored.get(tenant) ?? 0)));
    const quota = new ArtifactQuota(1000, slowStore);
    // Two concurrent writes of 600 bytes: each sees the other's reservation, so not both fit.
    const first = quota.reserve('t', 600);
    answer();
    const release = await first;
    const second = quota.reserve('t', 600);
    answer();
    const refused = await second.catch((e) => e);
    expect(refused).toBeInstanceOf(GatewayError);
    expect(refused).toMatchObject({ code: 'artifact_quota_exceeded', details: { fields: { limit_bytes: 1000, stored_bytes: 600 } } });
    // Written: the store now holds it, the reservation goes; another tenant is not affected.
    stored.set('t', 600);
    release();
    const other = quota.reserve('u', 900);
    answer();
    await expect(other).resolves.toBeInstanceOf(Function);
    const small = quota.reserve('t', 400);
    answer();
    await expect(small).resolves.toBeInstanceOf(Function);
  });

  it('0 means no quota, and the store is not asked', async () => {
    const quota = new ArtifactQuota(0, () => Promise.reject(new Error('not asked')));
    await expect(quota.reserve('t', 10 ** 9)).resolves.toBeInstanceOf(Function);
  });
});
