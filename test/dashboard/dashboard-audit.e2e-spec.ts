/// <reference lib="dom" />
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { call } from '../control-plane/support';
import { boundWaits, closeWithin, describeWithBrowser, launch } from './browser';

const WAIT_MS = 20_000;
jest.setTimeout(90_000);

/** Issue 21: the audit trail on the dashboard — rows, filters and pages. */
describeWithBrowser('dashboard audit trail in a real browser', (executablePath) => {
  let gw: TestGateway;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let pageErrors: string[];

  beforeAll(async () => {
    gw = await startGateway();
    browser = await launch(executablePath);
    // 26 tenant writes and one key: more than one page (25 rows).
    for (let i = 0; i < 26; i++) expect((await call(gw, 'PUT', `/admin/tenants/team-${i}`, { rpm: 10 + i })).status).toBe(200);
    expect((await call(gw, 'POST', '/admin/keys', { name: 'k', tenant: 'team-0' })).status).toBe(201);
  });
  afterAll(async () => {
    if (browser) await closeWithin(browser, 'Chromium');
    await gw?.close();
  });
  beforeEach(async () => {
    context = boundWaits(await browser.newContext({ viewport: { width: 1366, height: 768 } }));
    page = await context.newPage();
    pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  });
  afterEach(async () => {
    await closeWithin(context, 'the browser context');
    expect(pageErrors).toEqual([]);
  });

  it('lists the newest admin actions with actor and role, filters by action and target, and pages', async () => {
    await page.goto(`${gw.url}/dashboard`);
    await page.fill('#token', TEST_ADMIN_TOKEN);
    await page.click('#login-submit');
    const rows = page.locator('#audit-table tbody tr');
    await rows.first().waitFor({ timeout: WAIT_MS });
    expect(await rows.count()).toBe(25);
    const newest = await rows.first().locator('td, th').allTextContents();
    expect(newest.slice(1, 5)).toEqual(['admin-token', 'admin', 'keys.create', newest[4]]);
    expect(newest[5]).toBe('completed 201');
    expect(await page.isDisabled('#audit-newer')).toBe(true);

    await page.click('#audit-older');
    await page.locator('#audit-newer:not([disabled])').waitFor({ timeout: WAIT_MS });
    expect(await rows.count()).toBe(2);
    expect(await rows.last().locator('th').textContent()).toBe('tenants.put');
    expect(await page.isDisabled('#audit-older')).toBe(true);

    await page.fill('#audit-action', 'tenants.put');
    await page.fill('#audit-target', 'team-7');
    await page.click('#audit-apply');
    await page.locator('#audit-table tbody tr', { hasText: 'team-7' }).waitFor({ timeout: WAIT_MS });
    await page.waitForFunction(() => document.querySelectorAll('#audit-table tbody tr').length === 1, undefined, { timeout: WAIT_MS });
    expect(await rows.first().textContent()).toContain('{"rpm":17}');

    await page.fill('#audit-action', 'Not an action');
    await page.click('#audit-apply');
    await page.locator('#audit-error', { hasText: "Query parameter 'action'" }).waitFor({ timeout: WAIT_MS });
  });
});
