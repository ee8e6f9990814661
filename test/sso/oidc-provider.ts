import { ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, JsonWebKey } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLOSE_MS, START_MS, withDeadline } from '../support/deadline';
import { startGateway, TestGateway } from '../support/gateway';

export const CLIENT_SECRET = 'switchboard-test-client-secret';
/** The users of test/sso/oidc-provider-process.mjs and the role their group maps to. */
export const USERS = { alice: 'admin', oscar: 'operator', vera: 'viewer' } as const;
export type TestUser = keyof typeof USERS | 'nobody';

/** A private RSA signing key as the provider's `jwks` takes it. */
export function signingKey(kid: string): JsonWebKey {
  const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  return { ...jwk, kid, alg: 'RS256', use: 'sig' };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * The OpenID Connect provider of the SSO tests: the `oidc-provider` package in a child process at
 * `http://localhost:<port>` — another site than the gateway at `http://127.0.0.1:<port>`, so the
 * browser's redirects between them are cross-site, as with a real identity provider.
 */
export class TestOidcProvider {
  private child: ChildProcess | undefined;
  readonly issuer: string;

  constructor(
    readonly port: number,
    private readonly redirectUri: string,
  ) {
    this.issuer = `http://localhost:${port}`;
  }

  /** (Re)starts the provider with these signing keys, the first one signing (a restart with new keys is a rotation). */
  async start(keys: JsonWebKey[]): Promise<void> {
    await this.stop();
    const child = spawn(process.execPath, [join(__dirname, 'oidc-provider-process.mjs')], {
      env: { ...process.env, PORT: String(this.port), ISSUER: this.issuer, REDIRECT_URI: this.redirectUri, CLIENT_SECRET, KEYS: JSON.stringify(keys) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await withDeadline(
      new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
        child.once('exit', (code) => reject(new Error(`the OIDC provider exited (${code}): ${stderr}`)));
      }),
      START_MS,
      'the OIDC provider did not start',
    );
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    await withDeadline(new Promise((resolve) => (child.once('exit', resolve), child.kill('SIGTERM'))), CLOSE_MS, 'the OIDC provider did not stop');
  }

  /** A JWT access token the provider issues for `user` (its token model, as its token endpoint would). */
  async accessToken(user: TestUser, ttlSecs = 600): Promise<string> {
    const res = await fetch(`${this.issuer}/test/token?user=${user}&ttl=${ttlSecs}`);
    if (!res.ok) throw new Error(`token for ${user}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { access_token: string }).access_token;
  }
}

/** A gateway with SSO against `provider` (roles: sb-viewers, sb-operators, sb-admins) at `http://127.0.0.1:<port>`. */
export async function startSsoGateway(provider: TestOidcProvider, gatewayPort: number, env: Record<string, string> = {}): Promise<TestGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-sso-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    [
      'auth:',
      '  oidc:',
      `    issuer: ${provider.issuer}`,
      '    client_id: switchboard',
      `    redirect_url: http://127.0.0.1:${gatewayPort}/auth/callback`,
      '    roles_claim: groups',
      '    audience: urn:switchboard',
      '    roles:',
      '      viewer: [sb-viewers]',
      '      operator: [sb-operators]',
      '      admin: [sb-admins]',
      '',
    ].join('\n'),
  );
  return startGateway({ LISTEN_ADDR: `127.0.0.1:${gatewayPort}`, CONFIG_FILE: file, OIDC_CLIENT_SECRET: CLIENT_SECRET, ...env });
}
