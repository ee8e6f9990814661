/// <reference lib="dom" />
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, post } from '../support/http';
import { boundWaits, closeWithin, describeWithBrowser, launch } from './browser';

/** Generous: two shared cores run the gateway, the worker and Chromium. */
const WAIT_MS = 20_000;
jest.setTimeout(90_000);

describeWithBrowser('dashboard: concurrency caps (a real browser)', (executablePath) => {
  let gw: TestGateway;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let worker: ScriptedWorker;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    gw = await startGateway({ HEARTBEAT_TIMEOUT_SECS: '600' });
    browser = await launch(executablePath);
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['cap-m'], max_concurrent: 4 }));
    context = boundWaits(await browser.newContext({ viewport: { width: 1366, height: 768 } }));
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  });

  afterAll(async () => {
    if (context) await closeWithin(context, 'the browser context');
    if (browser) await closeWithin(browser, 'Chromium');
    worker?.close();
    await gw?.close();
  });

  it("sets a tenant's max_concurrent from the form (keeping its other settings), shows in flight and waiting live, and clears it", async () => {
    expect((await admin(gw.url, 'PUT', '/admin/tenants/team-d', TEST_ADMIN_TOKEN, { rpm: 1000 })).status).toBe(200);
    await page.goto(`${gw.url}/dashboard`);
    await page.fill('#token', TEST_ADMIN_TOKEN);
    await page.click('#login-submit');
    await page.locator('#dashboard-view').waitFor({ state: 'visible', timeout: WAIT_MS });
    await page.locator('#caps-empty').waitFor({ state: 'visible', timeout: WAIT_MS });

    await page.selectOption('#caps-scope', 'tenant');
    await page.fill('#caps-id', 'team-d');
    await page.fill('#caps-limit', '1');
    await page.click('#caps-submit');
    await page.locator('.toast[data-tone="ok"]', { hasText: 'Set max_concurrent of tenant team-d to 1' }).waitFor({ timeout: WAIT_MS });
    const stored = await admin(gw.url, 'GET', '/admin/tenants/team-d', TEST_ADMIN_TOKEN);
    expect(stored.json.settings).toMatchObject({ rpm: 1000, max_concurrent: 1 });

    // Two requests of the tenant: one on the worker, one waiting for room.
    const first = post(gw.url, '/v1/chat/completions', chat('cap-m'), { 'x-tenant-id': 'team-d' });
    const second = post(gw.url, '/v1/chat/completions', chat('cap-m'), { 'x-tenant-id': 'team-d' });
    const req = await worker.next('request');
    const row = page.locator('#caps-table tr[data-cap="tenant:team-d"]');
    await row.locator('.waiting', { hasText: '1' }).waitFor({ timeout: WAIT_MS });
    expect(await row.locator('.in-flight').textContent()).toBe('1');
    expect(await row.locator('.limit').textContent()).toBe('1');
    worker.complete(req.request_id, { id: 'one', object: 'chat.completion', choices: [] });
    const next = await worker.next('request');
    worker.complete(next.request_id, { id: 'two', object: 'chat.completion', choices: [] });
    expect([(await first).status, (await second).status]).toEqual([200, 200]);

    await page.fill('#caps-limit', '');
    await page.click('#caps-submit');
    await page.locator('.toast[data-tone="ok"]', { hasText: 'Cleared max_concurrent of tenant team-d' }).waitFor({ timeout: WAIT_MS });
    const cleared = await admin(gw.url, 'GET', '/admin/tenants/team-d', TEST_ADMIN_TOKEN);
    expect(cleared.json.settings).toMatchObject({ rpm: 1000, max_concurrent: null });
    expect(pageErrors).toEqual([]);
  });
});
