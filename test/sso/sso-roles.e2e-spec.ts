import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { freePort, signingKey, startSsoGateway, TestOidcProvider, TestUser } from './oidc-provider';

/**
 * Issue 21, single sign-on: the admin API takes the issuer's JWT access tokens (verified against
 * its JWKS) beside ADMIN_TOKEN, and every admin route enforces the role it declares. The tokens
 * are real: issued by an `oidc-provider` running on another origin (test/sso/oidc-provider-process.mjs).
 */
const ROLES = ['viewer', 'operator', 'admin'] as const;
const USER_OF: Record<(typeof ROLES)[number], TestUser> = { viewer: 'vera', operator: 'oscar', admin: 'alice' };

interface Operation {
  method: string;
  path: string;
  role: (typeof ROLES)[number] | undefined;
}

describe('SSO: JWT access tokens and roles on the admin API', () => {
  let provider: TestOidcProvider;
  let gw: TestGateway;
  const k1 = signingKey('k1');
  const tokens: Partial<Record<TestUser, string>> = {};

  beforeAll(async () => {
    const gatewayPort = await freePort();
    provider = new TestOidcProvider(await freePort(), `http://127.0.0.1:${gatewayPort}/auth/callback`);
    await provider.start([k1]);
    gw = await startSsoGateway(provider, gatewayPort);
    for (const user of ['alice', 'oscar', 'vera', 'nobody'] as const) tokens[user] = await provider.accessToken(user);
  });

  afterAll(async () => {
    await gw?.close();
    await provider?.stop();
  });

  async function call(method: string, path: string, token: string | undefined): Promise<{ status: number; code: string | undefined }> {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
      ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{}' }),
    });
    const text = await res.text();
    let code: string | undefined;
    try {
      code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
    } catch {
      code = undefined;
    }
    return { status: res.status, code };
  }

  async function adminOperations(): Promise<Operation[]> {
    const doc = (await (await fetch(`${gw.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { security?: Array<Record<string, unknown>>; 'x-switchboard-role'?: (typeof ROLES)[number] }>>;
    };
    const ops: Operation[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (!op.security?.some((s) => 'AdminToken' in s)) continue;
        ops.push({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, 'no-such-thing'), role: op['x-switchboard-role'] });
      }
    }
    return ops;
  }

  it('every admin route in the OpenAPI document declares its role, and refuses each role below it with 403 forbidden', async () => {
    const ops = await adminOperations();
    expect(ops.length).toBeGreaterThanOrEqual(30);
    expect(ops.filter((o) => !o.role).map((o) => `${o.method} ${o.path}`)).toEqual([]);
    const refusals: string[] = [];
    for (const op of ops) {
      for (const role of ROLES.slice(0, ROLES.indexOf(op.role!))) {
        const r = await call(op.method, op.path, tokens[USER_OF[role]]);
        if (r.status !== 403 || r.code !== 'forbidden') refusals.push(`${op.method} ${op.path} as ${role}: ${r.status} ${r.code}`);
      }
    }
    expect(refusals).toEqual([]);
    // The roles the table promises (docs/enterprise.md#roles).
    const roleOf = (m: string, p: string) => ops.find((o) => o.method === m && o.path === p)?.role;
    expect(roleOf('GET', '/admin/workers')).toBe('viewer');
    expect(roleOf('POST', '/admin/workers/no-such-thing/drain')).toBe('operator');
    expect(roleOf('POST', '/admin/reload')).toBe('operator');
    expect(roleOf('POST', '/v1/models/load')).toBe('operator');
    expect(roleOf('POST', '/admin/keys')).toBe('admin');
    expect(roleOf('PUT', '/admin/tenants/no-such-thing')).toBe('admin');
    expect(roleOf('POST', '/admin/providers')).toBe('admin');
  });

  it('lets a role in where it is enough: the route runs (its own answer, never unauthorized or forbidden)', async () => {
    const ops = await adminOperations();
    const wrong: string[] = [];
    for (const op of ops) {
      // Deleting or creating things is left to the admin tests; the reads and the operator's calls are safe here.
      if (op.role === 'admin' && op.method !== 'GET') continue;
      const r = await call(op.method, op.path, tokens[USER_OF[op.role!]]);
      if (r.code === 'forbidden' || r.code === 'unauthorized') wrong.push(`${op.method} ${op.path} as ${op.role}: ${r.status} ${r.code}`);
    }
    expect(wrong).toEqual([]);
    expect((await call('GET', '/admin/workers', tokens.vera)).status).toBe(200);
    expect((await call('POST', '/admin/tenants', tokens.alice)).status).not.toBe(403);
    expect((await call('DELETE', '/admin/keys/no-such-key', tokens.alice)).status).toBe(404);
  });

  it('keeps ADMIN_TOKEN as the break-glass admin, and refuses a user whose groups grant no role with 403', async () => {
    expect((await call('DELETE', '/admin/keys/no-such-key', TEST_ADMIN_TOKEN)).status).toBe(404);
    expect(await call('GET', '/admin/workers', tokens.nobody)).toEqual({ status: 403, code: 'forbidden' });
    expect(await call('GET', '/admin/workers', undefined)).toEqual({ status: 401, code: 'unauthorized' });
  });

  it('refuses an expired access token, and one signed by a key that is not the issuer’s', async () => {
    const short = await provider.accessToken('alice', 1);
    expect((await call('GET', '/admin/workers', short)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await call('GET', '/admin/workers', short)).toEqual({ status: 401, code: 'unauthorized' });

    const [h, p] = tokens.alice!.split('.');
    const forged = `${h}.${p}.${Buffer.from('not the signature').toString('base64url')}`;
    expect(await call('GET', '/admin/workers', forged)).toEqual({ status: 401, code: 'unauthorized' });
  });

  it('follows a rotation of the provider’s signing key: a token signed by the new key is accepted without a gateway restart', async () => {
    expect((await call('GET', '/admin/workers', tokens.vera)).status).toBe(200);
    const k2 = signingKey('k2');
    await provider.start([k2, k1]); // the new key signs; the old one is still published
    const rotated = await provider.accessToken('vera');
    expect(JSON.parse(Buffer.from(rotated.split('.')[0], 'base64url').toString()).kid).toBe('k2');
    await new Promise((r) => setTimeout(r, 1_100)); // the JWKS is fetched again at most once a second
    expect((await call('GET', '/admin/workers', rotated)).status).toBe(200);
    expect((await call('GET', '/admin/workers', tokens.vera)).status).toBe(200);
    // A key id the provider does not publish is refused (after looking again).
    await provider.start([signingKey('k3')]);
    const foreign = await provider.accessToken('vera');
    await provider.start([k2, k1]);
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await call('GET', '/admin/workers', foreign)).toEqual({ status: 401, code: 'unauthorized' });
  });

  it('starts a sign-in with PKCE (S256), state and nonce, in a short-lived HttpOnly login-state cookie that is SameSite=Lax', async () => {
    const res = await fetch(`${gw.url}/auth/login`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get('location')!);
    expect(to.origin).toBe(provider.issuer);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
    for (const p of ['code_challenge', 'state', 'nonce']) expect(to.searchParams.get(p)).toMatch(/^[\w-]{20,}$/);
    expect(to.searchParams.get('redirect_uri')).toBe(`${gw.url}/auth/callback`);
    const cookie = res.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^switchboard_login=/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Lax');
    expect(cookie).toContain('Path=/auth');
    expect(cookie).toContain('Max-Age=600');
    // The PKCE verifier in it is never the challenge sent out.
    expect(cookie).not.toContain(to.searchParams.get('code_challenge')!);
  });
});
