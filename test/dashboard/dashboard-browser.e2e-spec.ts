/// <reference lib="dom" />
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post } from '../support/http';
import { call, createPool, OK_BODY } from '../control-plane/support';
import { withDeadline } from '../support/deadline';
import { boundWaits, closeWithin, describeWithBrowser, launch, screenshot } from './browser';

/** Generous: two shared cores run the gateway, the workers and Chromium. No timing is asserted. */
const WAIT_MS = 20_000;
jest.setTimeout(90_000);

/** Answers every request the worker gets (for traffic the test does not need to hold). */
function autoAnswer(worker: ScriptedWorker, status = 200): void {
  worker.ws.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { type: string; request_id?: string };
    if (frame.type === 'request' && frame.request_id) {
      worker.complete(frame.request_id, OK_BODY, status, { token_counts: { prompt_tokens: 3, completion_tokens: 2 } });
    }
  });
}

/** The number a KPI or cell shows (thousands separators removed). */
async function numberIn(page: Page, selector: string): Promise<number> {
  return Number(((await page.textContent(selector)) ?? '').replace(/[^\d.]/g, ''));
}

async function signIn(page: Page, gw: TestGateway): Promise<void> {
  await page.goto(`${gw.url}/dashboard`);
  await page.fill('#token', TEST_ADMIN_TOKEN);
  await page.click('#login-submit');
  await page.locator('#dashboard-view').waitFor({ state: 'visible', timeout: WAIT_MS });
  await page.locator('#conn-state', { hasText: 'Live' }).waitFor({ timeout: WAIT_MS });
}

describeWithBrowser('dashboard in a real browser', (executablePath) => {
  let gw: TestGateway;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  /** Errors the page threw or logged: none are expected. */
  let pageErrors: string[];
  const workers: ScriptedWorker[] = [];

  beforeAll(async () => {
    // Every test signs in from 127.0.0.1 and some send wrong or revoked tokens on purpose (the page
    // then reads with them in parallel); the admin token's failed-attempt limiter
    // (ADMIN_AUTH_FAILURE_LIMIT, default 10 a minute) would refuse the later tests' right token.
    gw = await startGateway({ HEARTBEAT_TIMEOUT_SECS: '600', CANCEL_GRACE_SECS: '30', ADMIN_AUTH_FAILURE_LIMIT: '1000' });
    browser = await launch(executablePath);
    // Two auto-answering workers serve the traffic of every test.
    for (const name of ['gpu-a', 'gpu-b']) {
      const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['live-m', 'chat-m'], max_concurrent: 4, worker_name: name });
      autoAnswer(worker);
      workers.push(worker);
    }
  });

  afterAll(async () => {
    if (browser) await closeWithin(browser, 'Chromium');
    for (const w of workers) w.close();
    await gw?.close();
  });

  beforeEach(async () => {
    // Every wait is bounded (navigation, selector, click): a hang fails in seconds, naming the call.
    context = boundWaits(await browser.newContext({ viewport: { width: 1366, height: 768 } }));
    page = await context.newPage();
    pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      // The browser logs every failed API read (a refused token, a provoked 404, 403 or outage) as a failed
      // resource: the tests provoke those on purpose, and a missing asset would fail them anyway.
      if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) pageErrors.push(`console: ${m.text()}`);
    });
  });

  afterEach(async () => {
    await closeWithin(context, 'the browser context');
    expect(pageErrors).toEqual([]);
  });

  it('sign-in: a wrong token is refused with a message; the right one is accepted and kept in sessionStorage only; logout forgets it', async () => {
    await page.goto(`${gw.url}/dashboard`);
    await screenshot(page, 'login-1366x768');
    expect(await page.isVisible('#login-view')).toBe(true);
    expect(await page.isVisible('#dashboard-view')).toBe(false);

    await page.fill('#token', 'not-the-admin-token');
    await page.click('#login-submit');
    await page.locator('#login-error', { hasText: 'refused this admin token (401)' }).waitFor({ timeout: WAIT_MS });
    expect(await page.getAttribute('#token', 'aria-invalid')).toBe('true');
    expect(await page.isVisible('#dashboard-view')).toBe(false);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    await page.fill('#token', TEST_ADMIN_TOKEN);
    await page.click('#login-submit');
    await page.locator('#dashboard-view').waitFor({ state: 'visible', timeout: WAIT_MS });
    expect(await page.isVisible('#login-view')).toBe(false);
    // Session storage only: no cookie, nothing in localStorage.
    expect(await page.evaluate(() => [sessionStorage.getItem('switchboard.adminToken'), localStorage.length, document.cookie])).toEqual([
      TEST_ADMIN_TOKEN,
      0,
      '',
    ]);
    expect(await context.cookies()).toEqual([]);

    // A reload in the same tab keeps the session; the page reads the API again at once.
    await page.reload();
    await page.locator('#conn-state', { hasText: 'Live' }).waitFor({ timeout: WAIT_MS });
    expect(await page.isVisible('#login-view')).toBe(false);

    // Another tab (a new session) must sign in again.
    const other = await context.newPage();
    await other.goto(`${gw.url}/dashboard`);
    expect(await other.isVisible('#login-view')).toBe(true);
    await other.close();

    await page.click('#logout');
    await page.locator('#login-view').waitFor({ state: 'visible', timeout: WAIT_MS });
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.locator('.toast', { hasText: 'Signed out' }).waitFor({ timeout: WAIT_MS });
    // Nothing of the session's data stays in the page.
    expect(await page.locator('#workers-table tbody tr').count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('token');
  });

  it('live: served, requests/s, the pool row and recent errors (with correlation ids) move while the page is open', async () => {
    await signIn(page, gw);
    const served0 = await numberIn(page, '.kpi[data-kpi="served"] .value');
    const poolServed0 = await numberIn(page, 'tr[data-pool="local"] .served');

    const N = 12;
    for (let i = 0; i < N; i++) expect((await post(gw.url, '/v1/chat/completions', chat('live-m'))).status).toBe(200);
    const missing = await post(gw.url, '/v1/chat/completions', chat('no-such-model'), { 'x-correlation-id': 'dash-live-corr-1' });
    expect(missing.status).toBe(404);

    await page.waitForFunction(
      ([n]) => Number(document.querySelector('.kpi[data-kpi="served"] .value')!.textContent!.replace(/[^\d]/g, '')) >= n,
      [served0 + N],
      { timeout: WAIT_MS },
    );
    await page.waitForFunction(
      ([n]) => Number(document.querySelector('tr[data-pool="local"] .served')!.textContent!.replace(/[^\d]/g, '')) >= n,
      [poolServed0 + N],
      {
        timeout: WAIT_MS,
      },
    );
    await page.waitForFunction(() => parseFloat(document.querySelector('.kpi[data-kpi="rps"] .value')!.textContent!) > 0, undefined, { timeout: WAIT_MS });
    await page.waitForFunction(() => document.querySelector('.kpi[data-kpi="latency"] .value')!.textContent!.includes('ms'), undefined, { timeout: WAIT_MS });

    const errorRow = page.locator('#errors-table tbody tr[data-correlation-id="dash-live-corr-1"]');
    await errorRow.waitFor({ timeout: WAIT_MS });
    expect(await errorRow.locator('.code').textContent()).toBe('model_not_found');
    expect(await errorRow.locator('.status').textContent()).toBe('404');
    expect(await errorRow.locator('.model').textContent()).toBe('no-such-model');
    expect(await page.textContent('#errors-by-code')).toContain('model_not_found');

    // The live region announces state changes only, not every update.
    expect(await page.getAttribute('#conn-state', 'aria-live')).toBe('polite');
    await screenshot(page, 'live-1366x768');
  });

  it('drain a worker: confirmation (Escape cancels), graceful_shutdown with the chosen deadline, draining and cordoned on the page, undrain', async () => {
    const { worker: hold, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['hold-m'], worker_name: 'hold-1' });
    workers.push(hold);
    const id = ack.worker_id as string;
    // A request in flight keeps the drained worker connected (an idle one closes at once).
    const pending = post(gw.url, '/v1/chat/completions', chat('hold-m'));
    const req = await hold.next('request');

    await signIn(page, gw);
    const row = page.locator(`#workers-table tr[data-worker-id="${id}"]`);
    await row.waitFor({ timeout: WAIT_MS });
    expect(await row.locator('.badges').textContent()).toBe('Serving');
    expect(await row.locator('.slots').textContent()).toBe('1 / 1');

    // Cancelled: nothing is sent.
    await row.locator('button[data-action="worker-drain"]').click();
    await page.locator('#confirm-dialog').waitFor({ state: 'visible' });
    expect(await page.textContent('#confirm-title')).toBe('Drain worker hold-1?');
    expect(await page.textContent('#confirm-text')).toContain('closes once its 1 request in flight finishes');
    await page.keyboard.press('Escape');
    await page.locator('#confirm-dialog').waitFor({ state: 'hidden' });
    expect(hold.count('graceful_shutdown')).toBe(0);

    // Confirmed, with a deadline and a reason.
    await row.locator('button[data-action="worker-drain"]').click();
    await page.fill('#confirm-deadline', '0');
    await page.click('#confirm-ok');
    await page.locator('#confirm-error', { hasText: 'whole number of seconds' }).waitFor();
    await page.fill('#confirm-deadline', '60');
    await page.fill('#confirm-reason', 'dashboard-test');
    await page.click('#confirm-ok');
    const shutdown = await hold.next('graceful_shutdown');
    expect(shutdown).toMatchObject({ reason: 'dashboard-test', drain_timeout_secs: 60 });

    await page.locator('.toast.ok', { hasText: 'Worker hold-1 is draining' }).waitFor({ timeout: WAIT_MS });
    await row.locator('.badge', { hasText: 'Draining' }).waitFor({ timeout: WAIT_MS });
    await row.locator('.badge', { hasText: 'Cordoned' }).waitFor({ timeout: WAIT_MS });
    await row.locator('button[data-action="worker-undrain"]').waitFor({ timeout: WAIT_MS });
    await page.locator('#cordons-list li', { hasText: 'Worker hold-1 · pool local' }).waitFor({ timeout: WAIT_MS });
    expect(await page.textContent('#cordons-list')).toContain('reason: dashboard-test');
    await screenshot(page, 'worker-drained-1366x768', true);

    // Undrain from the worker's row: the name's cordon is lifted (the connection still finishes its drain).
    await row.locator('button[data-action="worker-undrain"]').click();
    await page.locator('.toast.ok', { hasText: 'Undrained worker hold-1' }).waitFor({ timeout: WAIT_MS });
    expect((await call(gw, 'GET', '/admin/cordons')).json.workers).toEqual([]);
    await page.locator('#cordons-list li').waitFor({ state: 'detached', timeout: WAIT_MS });
    await row.locator('.badge', { hasText: 'Cordoned' }).waitFor({ state: 'detached', timeout: WAIT_MS });
    expect(await row.locator('.badges').textContent()).toBe('Draining');
    expect(await row.locator('button[data-action="worker-drain"]').isDisabled()).toBe(true);

    // Its last request done, the worker closes and leaves the table.
    hold.complete(req.request_id, OK_BODY);
    expect((await pending).status).toBe(200);
    await hold.closed;
    await row.waitFor({ state: 'detached', timeout: WAIT_MS });
  });

  it('drain and undrain a pool, and refresh a worker’s models, with the result shown', async () => {
    const east = await createPool(gw, 'east');
    const { worker: eastWorker } = await ScriptedWorker.register(gw.workerUrl, { models: ['east-m'], worker_name: 'east-1' }, east);
    workers.push(eastWorker);

    await signIn(page, gw);
    const poolRow = page.locator('#pools-table tr[data-pool="east"]');
    await poolRow.waitFor({ timeout: WAIT_MS });
    await poolRow.locator('.badge', { hasText: 'Ready' }).waitFor({ timeout: WAIT_MS });

    await poolRow.locator('button[data-action="pool-drain"]').click();
    expect(await page.textContent('#confirm-title')).toBe('Drain pool east?');
    await page.click('#confirm-ok');
    expect(await eastWorker.next('graceful_shutdown')).toMatchObject({ reason: 'pool_drain' });
    await eastWorker.closed; // idle: it closes at once
    await page.locator('.toast.ok', { hasText: 'Pool east is drained' }).waitFor({ timeout: WAIT_MS });
    await poolRow.locator('.badge', { hasText: 'Drained' }).waitFor({ timeout: WAIT_MS });
    await page.locator('#cordons-list li', { hasText: 'Pool east' }).waitFor({ timeout: WAIT_MS });
    expect((await call(gw, 'GET', '/v1/pools/east/health')).json.draining).toBe(true);

    await poolRow.locator('button[data-action="pool-undrain"]').click();
    await page.locator('.toast.ok', { hasText: 'Undrained pool east' }).waitFor({ timeout: WAIT_MS });
    await poolRow.locator('.badge', { hasText: 'Drained' }).waitFor({ state: 'detached', timeout: WAIT_MS });
    expect((await call(gw, 'GET', '/v1/pools/east/health')).json.draining).toBe(false);

    // Refresh models: the worker is asked at once.
    const gpuA = page.locator('#workers-table tr', { has: page.locator('.worker-name', { hasText: 'gpu-a' }) });
    const before = workers[0].count('models_refresh');
    await gpuA.locator('button[data-action="refresh-models"]').click();
    await page.locator('.toast.ok', { hasText: 'Asked worker gpu-a to refresh its models' }).waitFor({ timeout: WAIT_MS });
    await eventually(() => workers[0].count('models_refresh') === before + 1, WAIT_MS);

    // An action the API refuses shows why. The page's reads are held back (its rows stay as they
    // were) while the pool is deleted behind its back; the drain then reaches the real gateway.
    await page.route('**/v1/pools', (route) => route.abort('connectionrefused'));
    await page.locator('#conn-state', { hasText: 'Connection problem' }).waitFor({ timeout: WAIT_MS });
    expect((await call(gw, 'DELETE', '/admin/providers/east')).status).toBe(200);
    await poolRow.locator('button[data-action="pool-drain"]').click();
    await page.click('#confirm-ok');
    await page.locator('.toast.bad', { hasText: "Failed: 404 not_found: Pool 'east' not found" }).waitFor({ timeout: WAIT_MS });
    await page.unroute('**/v1/pools');
    await poolRow.waitFor({ state: 'detached', timeout: WAIT_MS });
  });

  it('keyboard only: skip link, sign in, reach a drain button, confirm dialog keeps focus, Escape returns it; focus is always visible', async () => {
    const { worker: kbd, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['kbd-m'], worker_name: 'kbd-1' });
    workers.push(kbd);
    await page.goto(`${gw.url}/dashboard`);

    const focused = () =>
      page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        if (!el) return null;
        const style = getComputedStyle(el);
        return {
          id: el.id,
          tag: el.tagName,
          className: el.className,
          action: el.getAttribute('data-action'),
          row: el.closest('tr')?.getAttribute('data-worker-id') ?? null,
          outline: style.outlineStyle === 'none' ? 0 : parseFloat(style.outlineWidth),
        };
      });

    await page.keyboard.press('Tab');
    expect(await focused()).toMatchObject({ className: 'skip-link' });
    expect((await focused())!.outline).toBeGreaterThanOrEqual(2);
    await page.keyboard.press('Tab');
    expect(await focused()).toMatchObject({ id: 'token' });
    expect((await focused())!.outline).toBeGreaterThanOrEqual(2);

    // A wrong token: the message is read out (role=alert) and the field keeps the focus, its text selected.
    await page.keyboard.type('wrong-token');
    await page.keyboard.press('Enter');
    await page.locator('#login-error', { hasText: '401' }).waitFor({ timeout: WAIT_MS });
    expect(await page.getAttribute('#login-error', 'role')).toBe('alert');
    expect(await focused()).toMatchObject({ id: 'token' });
    await page.keyboard.type(TEST_ADMIN_TOKEN); // replaces the selection
    await page.keyboard.press('Enter');
    await page.locator('#dashboard-view').waitFor({ state: 'visible', timeout: WAIT_MS });
    expect(await focused()).toMatchObject({ id: 'overview-title' });

    // Tab to kbd-1's Drain button; every stop on the way shows its focus.
    let reached = false;
    for (let i = 0; i < 80 && !reached; i++) {
      await page.keyboard.press('Tab');
      const f = (await focused())!;
      if (['BUTTON', 'A', 'INPUT'].includes(f.tag)) expect([f.tag, f.id, f.action, f.outline >= 2]).toEqual([f.tag, f.id, f.action, true]);
      reached = f.action === 'worker-drain' && f.row === ack.worker_id;
    }
    expect(reached).toBe(true);

    await page.keyboard.press('Enter');
    await page.locator('#confirm-dialog').waitFor({ state: 'visible' });
    expect(await focused()).toMatchObject({ id: 'confirm-cancel' });
    // The modal keeps the keyboard inside it.
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => !!document.activeElement?.closest('#confirm-dialog') || document.activeElement === document.body)).toBe(true);
    }
    await page.keyboard.press('Escape');
    await page.locator('#confirm-dialog').waitFor({ state: 'hidden' });
    expect(await focused()).toMatchObject({ action: 'worker-drain', row: ack.worker_id });
    expect(kbd.count('graceful_shutdown')).toBe(0);

    // Log out with the keyboard too.
    let onLogout = false;
    for (let i = 0; i < 120 && !onLogout; i++) {
      await page.keyboard.press('Shift+Tab');
      onLogout = (await focused())!.id === 'logout';
    }
    expect(onLogout).toBe(true);
    await page.keyboard.press('Enter');
    await page.locator('#login-view').waitFor({ state: 'visible', timeout: WAIT_MS });
    expect(await focused()).toMatchObject({ id: 'token' });
    kbd.close();
  });

  it('API errors: a 401 while signed in returns to the sign-in form with a message; a failed read marks the data stale until the next good one', async () => {
    await signIn(page, gw);

    await page.route('**/admin/workers', (route) => route.abort('connectionrefused'));
    await page.locator('#conn-state', { hasText: 'Connection problem' }).waitFor({ timeout: WAIT_MS });
    expect(await page.getAttribute('#dashboard-view', 'class')).toContain('stale-data');
    expect(await page.isVisible('#dashboard-view')).toBe(true);
    await page.unroute('**/admin/workers');
    await page.locator('#conn-state', { hasText: 'Live' }).waitFor({ timeout: WAIT_MS });
    expect(await page.getAttribute('#dashboard-view', 'class')).not.toContain('stale-data');

    // The admin token was changed on the gateway: the next read is a 401.
    await page.route('**/admin/stats', (route) =>
      route.fulfill({
        status: 401,
        contentType: 'application/json',
        body: JSON.stringify({ error: { message: 'Invalid or missing admin token', type: 'invalid_request_error', code: 'unauthorized' } }),
      }),
    );
    await page.locator('#login-view').waitFor({ state: 'visible', timeout: WAIT_MS });
    expect(await page.textContent('#login-error')).toContain('no longer accepts your admin token (401)');
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(await page.isVisible('#dashboard-view')).toBe(false);
    await page.unroute('**/admin/stats');
  });

  it('readable at 1366×768 and accessible: no horizontal scroll, labelled controls, named buttons, text contrast ≥ WCAG AA', async () => {
    // A worker in every state the table shows: serving, draining + cordoned.
    const { worker: busy, ack } = await ScriptedWorker.register(gw.workerUrl, { models: ['a11y-m'], worker_name: 'a11y-1' });
    workers.push(busy);
    const pending = post(gw.url, '/v1/chat/completions', chat('a11y-m'));
    const req = await busy.next('request');
    expect((await call(gw, 'POST', `/admin/workers/${ack.worker_id}/drain`, { timeout_secs: 60 })).status).toBe(202);
    for (let i = 0; i < 5; i++) await post(gw.url, '/v1/chat/completions', chat('chat-m'));

    await signIn(page, gw);
    await page.locator(`#workers-table tr[data-worker-id="${ack.worker_id}"] .badge`, { hasText: 'Cordoned' }).waitFor({ timeout: WAIT_MS });
    const path = await screenshot(page, 'overview-1366x768');
    expect(path).toMatch(/overview-1366x768\.png$/);
    await screenshot(page, 'overview-full-page', true);

    const report = await page.evaluate(() => {
      const rgba = (c: string) => (c.match(/[\d.]+/g) ?? ['0', '0', '0', '0']).map(Number);
      const lum = ([r, g, b]: number[]) => {
        const f = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
      };
      const background = (el: Element | null): number[] => {
        const layers: number[][] = [];
        for (let e = el; e; e = e.parentElement) {
          const c = rgba(getComputedStyle(e).backgroundColor);
          const a = c.length > 3 ? c[3] : 1;
          if (a > 0) layers.push([c[0], c[1], c[2], a]);
          if (a >= 1) break;
        }
        let out = [255, 255, 255];
        for (const [r, g, b, a] of layers.reverse()) out = [r * a + out[0] * (1 - a), g * a + out[1] * (1 - a), b * a + out[2] * (1 - a)];
        return out;
      };
      const failures: string[] = [];
      let checked = 0;
      for (const el of Array.from(document.querySelectorAll('body *'))) {
        if (el.closest('svg') || (el as HTMLButtonElement).disabled) continue;
        const ownText = Array.from(el.childNodes).some((n) => n.nodeType === Node.TEXT_NODE && n.textContent!.trim());
        if (!ownText || el.getClientRects().length === 0) continue;
        const style = getComputedStyle(el);
        if (style.visibility === 'hidden' || style.clip === 'rect(0px, 0px, 0px, 0px)') continue;
        const fg = rgba(style.color);
        const bg = background(el);
        const [l1, l2] = [lum(fg), lum(bg)].sort((a, b) => b - a);
        const ratio = (l1 + 0.05) / (l2 + 0.05);
        const size = parseFloat(style.fontSize);
        const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
        checked++;
        if (ratio < (large ? 3 : 4.5)) failures.push(`${el.tagName}.${el.className} "${el.textContent!.trim().slice(0, 30)}" ${ratio.toFixed(2)}`);
      }
      const unlabelled = Array.from(document.querySelectorAll('input'))
        .filter((i) => !i.labels || i.labels.length === 0)
        .map((i) => i.id);
      const unnamedButtons = Array.from(document.querySelectorAll('button')).filter((b) => !(b.getAttribute('aria-label') || b.textContent!.trim())).length;
      const charts = Array.from(document.querySelectorAll('.chart svg')).map((s) => [s.getAttribute('role'), (s.getAttribute('aria-label') ?? '').length > 10]);
      return {
        checked,
        failures,
        unlabelled,
        unnamedButtons,
        charts,
        horizontalScroll: document.documentElement.scrollWidth > window.innerWidth,
        lang: document.documentElement.lang,
        h1: document.querySelectorAll('h1').length,
      };
    });
    expect(report.failures).toEqual([]);
    expect(report.checked).toBeGreaterThan(50);
    expect(report.unlabelled).toEqual([]);
    expect(report.unnamedButtons).toBe(0);
    expect(report.charts).toEqual([
      ['img', true],
      ['img', true],
      ['img', true],
      ['img', true],
    ]);
    expect(report.horizontalScroll).toBe(false);
    expect(report.lang).toBe('en');
    expect(report.h1).toBe(1);

    busy.complete(req.request_id, OK_BODY);
    await pending;
    await busy.closed;
    expect((await call(gw, 'POST', `/admin/workers/${ack.worker_id}/undrain`)).status).toBe(200);
  });

  it('a gateway without ADMIN_TOKEN: the page loads, and sign-in says the admin API is disabled (403)', async () => {
    const bare = await startGateway({ ADMIN_TOKEN: '' });
    try {
      await page.goto(`${bare.url}/dashboard`);
      await page.fill('#token', 'anything');
      await page.click('#login-submit');
      await page
        .locator('#login-error', { hasText: 'admin API is disabled on this gateway: no ADMIN_TOKEN is configured (403)' })
        .waitFor({ timeout: WAIT_MS });
      expect(await page.isVisible('#dashboard-view')).toBe(false);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    } finally {
      await bare.close();
    }
  });

  it('the page’s own arithmetic (rates between polls, chart paths, formats), run in the browser', async () => {
    await page.goto(`${gw.url}/dashboard`);
    // A string, not a function: ts-jest would compile a dynamic import() into a CommonJS require.
    const r: any = await withDeadline(
      page.evaluate(`(async () => {
      const m = await import(new URL('dashboard/assets/model.js', document.baseURI).href);
      return {
        rate: m.ratePerSecond({ count: 10, at: 1000, since: 's' }, { count: 30, at: 5000, since: 's' }),
        restarted: m.ratePerSecond({ count: 10, at: 1000, since: 's' }, { count: 3, at: 5000, since: 't' }),
        first: m.ratePerSecond(null, { count: 3, at: 5000, since: 's' }),
        path: m.linePath([0, null, 2, 4], 300, 64, 4),
        series: m.historySeries({ bucket_secs: 10, start: '', requests: [10, 20, 5], errors: [1, 0, 0], latency_p50_ms: [5, null, 1], latency_p95_ms: [9, null, 2] }),
        formats: [m.fmtRate(0.5), m.fmtRate(12.34), m.fmtPct(0.0241), m.fmtMs(12345), m.fmtMsPair(30, 38), m.niceMax([3.2], 1), m.niceMax([], 0.05)],
        total: m.finishedTotal({
          since: '',
          pools: [{ served: 5, cancelled: 1, errors_by_code: { queue_full: 2 } }],
          unrouted: { rejected_by_code: {}, errors_by_code: { model_not_found: 3 } },
        }),
      };
    })()`),
      WAIT_MS,
      "the page's model.js did not load and answer in the browser",
    );
    expect(r.rate).toBe(5);
    expect(r.restarted).toBeNull();
    expect(r.first).toBeNull();
    // A lone point between gaps is a dot (a tiny segment).
    expect(r.path).toBe('M0 63 h0.5 M200 32 L300 1');
    // The last (still filling) bucket is left out.
    expect(r.series).toEqual({ rps: [1, 2], errorRate: [0.1, 0], p50: [5, null], p95: [9, null], bucketSecs: 10 });
    expect(r.formats).toEqual(['0.50', '12.3', '2.4 %', '12.3 s', '30 / 38 ms', 5, 0.05]);
    expect(r.total).toBe(11);
  });
});
