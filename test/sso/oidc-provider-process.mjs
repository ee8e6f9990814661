// A real OpenID Connect provider (the `oidc-provider` package) for the SSO tests, run as its own
// process so the gateway under test talks to another origin over real sockets, as in production.
// Env: PORT, ISSUER, REDIRECT_URI, CLIENT_SECRET, KEYS (JSON list of private RSA JWKs, the first
// signs). Users: alice (sb-admins), oscar (sb-operators), vera (sb-viewers), nobody (no group);
// any password. `GET /test/token?user=alice&ttl=60` mints a JWT access token through the provider's
// own token model (what its token endpoint would issue for that user). Prints `ready` when listening.
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const { PORT, ISSUER, REDIRECT_URI, CLIENT_SECRET, KEYS } = process.env;
const GROUPS = { alice: ['sb-admins'], oscar: ['sb-operators'], vera: ['sb-viewers'], nobody: [] };
const AUDIENCE = 'urn:switchboard';
const resourceServer = { scope: 'openid profile', audience: AUDIENCE, accessTokenFormat: 'jwt', accessTokenTTL: 600 };

const provider = new Provider(ISSUER, {
  clients: [
    {
      client_id: 'switchboard',
      client_secret: CLIENT_SECRET,
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    },
  ],
  jwks: { keys: JSON.parse(KEYS) },
  pkce: { required: () => true },
  claims: { openid: ['sub'], profile: ['name', 'preferred_username', 'groups'] },
  conformIdTokenClaims: false,
  findAccount: (_ctx, id) =>
    GROUPS[id]
      ? { accountId: id, claims: () => ({ sub: id, name: `${id[0].toUpperCase()}${id.slice(1)}`, preferred_username: id, groups: GROUPS[id] }) }
      : undefined,
  extraTokenClaims: (_ctx, token) => ({ groups: GROUPS[token.accountId] ?? [], name: token.accountId }),
  features: {
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => AUDIENCE,
      useGrantedResource: () => true,
      getResourceServerInfo: () => resourceServer,
    },
  },
  loadExistingGrant: async (ctx) => {
    // Consent is implied for the one client: the test users sign in and come straight back.
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid profile');
    grant.addOIDCClaims(['name', 'preferred_username', 'groups']);
    grant.addResourceScope(AUDIENCE, 'openid profile');
    await grant.save();
    return grant;
  },
});
provider.proxy = false;

const handler = provider.callback();
const server = createServer(async (req, res) => {
  const url = new URL(req.url, ISSUER);
  if (url.pathname !== '/test/token') return handler(req, res);
  try {
    const user = url.searchParams.get('user');
    const client = await provider.Client.find('switchboard');
    const rs = new provider.ResourceServer(AUDIENCE, resourceServer);
    const token = new provider.AccessToken({
      accountId: user,
      client,
      scope: 'openid profile',
      resourceServer: rs,
      expiresIn: Number(url.searchParams.get('ttl') ?? 600),
    });
    const value = await token.save();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: value }));
  } catch (e) {
    res.writeHead(500).end(String(e?.stack ?? e));
  }
});
server.listen(Number(PORT), () => console.log('ready'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
