import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readOidcConfig } from './auth';

describe('auth.oidc configuration', () => {
  const oidc = { issuer: 'https://idp.example.com/realms/ops', client_id: 'sb', redirect_url: 'https://gw.example.com/auth/callback' };

  it('is off without an issuer', () => {
    const problems: string[] = [];
    expect(readOidcConfig({}, undefined, problems)).toBeUndefined();
    expect(problems).toEqual([]);
  });

  it('reads the keys, the roles mapping and the client secret from its file (the environment wins)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'oidc-'));
    writeFileSync(join(dir, 'secret'), 'from-file\n');
    const problems: string[] = [];
    const section = { oidc: { ...oidc, client_secret_file: join(dir, 'secret'), roles_claim: 'roles', roles: { viewer: ['v'], admin: 'a' } } };
    expect(readOidcConfig({}, section, problems)).toEqual({
      issuer: oidc.issuer,
      clientId: 'sb',
      clientSecret: 'from-file',
      redirectUrl: oidc.redirect_url,
      rolesClaim: 'roles',
      roles: { viewer: ['v'], operator: [], admin: ['a'] },
      audience: undefined,
      sessionTtlMs: 3_600_000,
    });
    expect(problems).toEqual([]);
    expect(readOidcConfig({ OIDC_CLIENT_SECRET: 'from-env' }, section, [])?.clientSecret).toBe('from-env');
  });

  it('names every mistake: a missing client id, a callback elsewhere than /auth/callback, an unknown role or key', () => {
    const problems: string[] = [];
    readOidcConfig({}, { oidc: { issuer: oidc.issuer, redirect_url: 'https://gw/cb', roles: { superuser: ['x'] }, colour: 1 }, other: 1 }, problems);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining('auth.other'),
        expect.stringContaining('auth.oidc.colour'),
        expect.stringContaining('auth.oidc.roles.superuser'),
        expect.stringContaining('client_id'),
        expect.stringContaining('/auth/callback'),
      ]),
    );
  });
});
