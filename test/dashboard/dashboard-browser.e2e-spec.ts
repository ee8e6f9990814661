/// <reference lib="dom" />
import type { BrowserContext, Page } from 'playwright-core';
import { TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, eventually, post } from '../support/http';
import { call, createPool, OK_BODY } from '../control-plane/support';
import { describeWithBrowser, screenshot } from './browser';
import { DashboardBrowserSession, numberIn, signIn, WAIT_MS } from './browser-session';

// Keyboard use, API errors, accessibility, no ADMIN_TOKEN and the page's arithmetic: dashboard-browser-access.e2e-spec.ts.

jest.setTimeout(90_000);

describeWithBrowser('dashboard in a real browser', (executablePath) => {
  const session = new DashboardBrowserSession(executablePath);
  let gw: TestGateway;
  let context: BrowserContext;
  let page: Page;
  let workers: ScriptedWorker[];

  beforeAll(() => {
    ({ gw, workers } = session);
  });

  beforeEach(() => {
    ({ context, page } = session);
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

  it('workers of several replicas (cluster mode) show a Replica column naming each one’s; one gateway’s table has none', async () => {
    await signIn(page, gw);
    const rowOf = (name: string) => page.locator('#workers-table tbody tr', { has: page.locator('.worker-name', { hasText: name }) });
    await rowOf('gpu-b').waitFor({ timeout: WAIT_MS });
    // One gateway: every worker names the same replica (its INSTANCE_ID), so no column repeats it.
    const own = ((await call(gw, 'GET', '/admin/workers')).json.data as Array<{ replica: string }>)[0].replica;
    expect(own).toMatch(/\S/);
    expect(await page.isVisible('#workers-replica-col')).toBe(false);
    expect(await rowOf('gpu-a').locator('td.replica').isVisible()).toBe(false);
    expect(await page.locator('#workers-table').innerText()).not.toContain(own);

    // What /admin/workers of a cluster answers: gpu-b connected to another replica.
    await page.route('**/admin/workers', async (route) => {
      const response = await route.fetch();
      const body = (await response.json()) as { data: Array<{ name: string; replica: string }> };
      for (const w of body.data) if (w.name === 'gpu-b') w.replica = 'gateway-2';
      await route.fulfill({ response, json: body });
    });
    await page.locator('#workers-replica-col').waitFor({ state: 'visible', timeout: WAIT_MS });
    expect(await page.textContent('#workers-replica-col')).toBe('Replica');
    await rowOf('gpu-b').locator('td.replica', { hasText: 'gateway-2' }).waitFor({ timeout: WAIT_MS });
    expect(await rowOf('gpu-a').locator('td.replica').innerText()).toBe(own);
    // The cell sits under its header.
    const headers = await page.locator('#workers-table thead th').allInnerTexts();
    const cells = await rowOf('gpu-b').locator('th, td').allInnerTexts();
    expect(cells[headers.indexOf('Replica')]).toBe('gateway-2');
    await screenshot(page, 'workers-replicas-1366x768');

    // Back to one replica: the column goes again.
    await page.unroute('**/admin/workers');
    await page.locator('#workers-replica-col').waitFor({ state: 'hidden', timeout: WAIT_MS });
    await rowOf('gpu-b').locator('td.replica').waitFor({ state: 'hidden', timeout: WAIT_MS });
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
});
