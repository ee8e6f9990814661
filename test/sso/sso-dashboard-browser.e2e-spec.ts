/// <reference lib="dom" />
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { TestGateway } from '../support/gateway';
import { boundWaits, closeWithin, describeWithBrowser, launch, screenshot } from '../dashboard/browser';
import { freePort, signingKey, startSsoGateway, TestOidcProvider } from './oidc-provider';

jest.setTimeout(90_000);

/**
 * Issue 21, single sign-on in Chromium: the dashboard's "Sign in with single sign-on" goes through
 * the provider's own login page at http://localhost:<port> (another site than the gateway at
 * http://127.0.0.1:<port>), comes back through /auth/callback with the Lax login-state cookie, and
 * the dashboard loads with its Strict session cookie. Mutating calls need the CSRF token; logout
 * ends the session on the gateway.
 */
describeWithBrowser('SSO: dashboard sign-in through a real OpenID Connect provider', (executablePath) => {
  let provider: TestOidcProvider;
  let gw: TestGateway;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    const gatewayPort = await freePort();
    provider = new TestOidcProvider(await freePort(), `http://127.0.0.1:${gatewayPort}/auth/callback`);
    await provider.start([signingKey('k1')]);
    gw = await startSsoGateway(provider, gatewayPort);
    browser = await launch(executablePath);
  });

  afterAll(async () => {
    if (browser) await closeWithin(browser, 'Chromium');
    await gw?.close();
    await provider?.stop();
  });

  beforeEach(async () => {
    context = boundWaits(await browser.newContext({ viewport: { width: 1366, height: 768 } }));
    page = await context.newPage();
  });

  afterEach(async () => {
    await closeWithin(context, 'the browser context');
  });

  async function signIn(user: string): Promise<void> {
    await page.goto(`${gw.url}/dashboard`);
    await page.locator('#sso-signin').waitFor({ state: 'visible' });
    await page.click('#sso-link');
    // The provider's own login page, on the provider's origin.
    await page.waitForURL((u) => u.origin === provider.issuer);
    await page.fill('input[name=login]', user);
    await page.fill('input[name=password]', 'any');
    await page.click('button[type=submit]');
    await page.waitForURL((u) => u.href.startsWith(`${gw.url}/dashboard`));
    await page.locator('#dashboard-view').waitFor({ state: 'visible' });
    await page.locator('#conn-state', { hasText: 'Live' }).waitFor();
  }

  /** A call from the page (same origin, the session cookie goes along). */
  function fromPage(method: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; code?: string }> {
    return page.evaluate(
      async ([m, p, h]) => {
        const res = await fetch(p, {
          method: m,
          headers: { 'content-type': 'application/json', ...h },
          body: m === 'GET' ? undefined : '{}',
          credentials: 'same-origin',
        });
        const body = await res.json().catch(() => ({}));
        return { status: res.status, code: body?.error?.code };
      },
      [method, path, headers] as const,
    );
  }

  async function csrf(): Promise<string> {
    return page.evaluate(async () => ((await (await fetch('/auth/session')).json()) as { csrf_token: string }).csrf_token);
  }

  it('signs in through the provider’s login page on another site and loads the dashboard with a Strict, HttpOnly session', async () => {
    await signIn('oscar');
    await page.locator('#signed-in-as', { hasText: 'Oscar (operator)' }).waitFor();
    expect(await page.textContent('#signed-in-as')).toBe('Oscar (operator)');
    const cookies = await context.cookies(gw.url);
    const session = cookies.find((c) => c.name === 'switchboard_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    // The login-state cookie was only for the round trip.
    expect(cookies.find((c) => c.name === 'switchboard_login')).toBeUndefined();
    await screenshot(page, 'sso-signed-in');
  });

  it('refuses a mutating call with the session cookie but without the CSRF token; accepts it with the token; enforces the role', async () => {
    await signIn('vera');
    expect(await fromPage('GET', '/admin/workers')).toMatchObject({ status: 200 });
    expect(await fromPage('POST', '/admin/reload')).toEqual({ status: 403, code: 'forbidden' });
    const token = await csrf();
    // vera is a viewer: with the CSRF token the call is authenticated, and refused for her role.
    expect(await fromPage('POST', '/admin/reload', { 'x-csrf-token': token })).toEqual({ status: 403, code: 'forbidden' });
    await closeWithin(context, 'the browser context');
    context = boundWaits(await browser.newContext());
    page = await context.newPage();
    await signIn('oscar');
    expect(await fromPage('POST', '/admin/reload', { 'x-csrf-token': 'wrong' })).toEqual({ status: 403, code: 'forbidden' });
    expect((await fromPage('POST', '/admin/reload', { 'x-csrf-token': await csrf() })).status).toBe(200);
  });

  it('logs out on the server: the old session cookie opens nothing afterwards', async () => {
    await signIn('alice');
    const cookie = (await context.cookies(gw.url)).find((c) => c.name === 'switchboard_session')!;
    const before = await fetch(`${gw.url}/admin/workers`, { headers: { cookie: `switchboard_session=${cookie.value}` } });
    expect(before.status).toBe(200);
    await page.click('#logout');
    await page.locator('#login-view').waitFor({ state: 'visible' });
    // The logout call is made by the page; wait until the gateway has ended the session.
    for (
      let i = 0;
      i < 50 && (await fetch(`${gw.url}/auth/session`, { headers: { cookie: `switchboard_session=${cookie.value}` } }).then((r) => r.json())).signed_in;
      i++
    ) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const after = await fetch(`${gw.url}/admin/workers`, { headers: { cookie: `switchboard_session=${cookie.value}` } });
    expect(after.status).toBe(401);
  });

  it('refuses a user whose groups grant no role, and a callback without the login-state cookie', async () => {
    await page.goto(`${gw.url}/auth/login`);
    await page.waitForURL((u) => u.origin === provider.issuer);
    await page.fill('input[name=login]', 'nobody');
    await page.fill('input[name=password]', 'any');
    const [response] = await Promise.all([page.waitForResponse((r) => r.url().startsWith(`${gw.url}/auth/callback`)), page.click('button[type=submit]')]);
    expect(response.status()).toBe(403);
    const res = await fetch(`${gw.url}/auth/callback?code=x&state=y`);
    expect(res.status).toBe(401);
  });
});
