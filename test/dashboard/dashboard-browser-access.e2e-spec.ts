/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post } from '../support/http';
import { call, OK_BODY } from '../control-plane/support';
import { withDeadline } from '../support/deadline';
import { describeWithBrowser, screenshot } from './browser';
import { DashboardBrowserSession, signIn, WAIT_MS } from './browser-session';

// Split from dashboard-browser.e2e-spec.ts (same describe, its own gateway and Chromium): keyboard use, API
// errors, layout and accessibility, a gateway without ADMIN_TOKEN, and the page's own arithmetic.

jest.setTimeout(90_000);

describeWithBrowser('dashboard in a real browser', (executablePath) => {
  const session = new DashboardBrowserSession(executablePath);
  let gw: TestGateway;
  let page: Page;
  let workers: ScriptedWorker[];

  beforeAll(() => {
    ({ gw, workers } = session);
  });

  beforeEach(() => {
    ({ page } = session);
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
