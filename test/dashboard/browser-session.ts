/// <reference lib="dom" />
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startGateway, TestGateway, TEST_ADMIN_TOKEN } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { OK_BODY } from '../control-plane/support';
import { boundWaits, closeWithin, launch } from './browser';

// Shared setup of the dashboard browser tests (dashboard-browser*.e2e-spec.ts): one gateway with two
// auto-answering workers and one Chromium per file, a fresh context and page per test.

/** Generous: two shared cores run the gateway, the workers and Chromium. No timing is asserted. */
export const WAIT_MS = 20_000;

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
export async function numberIn(page: Page, selector: string): Promise<number> {
  return Number(((await page.textContent(selector)) ?? '').replace(/[^\d.]/g, ''));
}

export async function signIn(page: Page, gw: TestGateway): Promise<void> {
  await page.goto(`${gw.url}/dashboard`);
  await page.fill('#token', TEST_ADMIN_TOKEN);
  await page.click('#login-submit');
  await page.locator('#dashboard-view').waitFor({ state: 'visible', timeout: WAIT_MS });
  await page.locator('#conn-state', { hasText: 'Live' }).waitFor({ timeout: WAIT_MS });
}

/**
 * Registers the hooks of a file's browser tests and holds what they set up: read `gw`, `workers`
 * after beforeAll, `context`, `page` after beforeEach. Call it in the describe's body.
 */
export class DashboardBrowserSession {
  gw!: TestGateway;
  browser!: Browser;
  context!: BrowserContext;
  page!: Page;
  /** Errors the page threw or logged: none are expected. */
  pageErrors: string[] = [];
  readonly workers: ScriptedWorker[] = [];

  constructor(executablePath: string) {
    beforeAll(() => this.start(executablePath));
    afterAll(() => this.stop());
    beforeEach(() => this.openPage());
    afterEach(() => this.closePage());
  }

  private async start(executablePath: string): Promise<void> {
    // Every test signs in from 127.0.0.1 and some send wrong or revoked tokens on purpose (the page
    // then reads with them in parallel); the admin token's failed-attempt limiter
    // (ADMIN_AUTH_FAILURE_LIMIT, default 10 a minute) would refuse the later tests' right token.
    this.gw = await startGateway({ HEARTBEAT_TIMEOUT_SECS: '600', CANCEL_GRACE_SECS: '30', ADMIN_AUTH_FAILURE_LIMIT: '1000' });
    this.browser = await launch(executablePath);
    // Two auto-answering workers serve the traffic of every test.
    for (const name of ['gpu-a', 'gpu-b']) {
      const { worker } = await ScriptedWorker.register(this.gw.workerUrl, { models: ['live-m', 'chat-m'], max_concurrent: 4, worker_name: name });
      autoAnswer(worker);
      this.workers.push(worker);
    }
  }

  private async stop(): Promise<void> {
    if (this.browser) await closeWithin(this.browser, 'Chromium');
    for (const w of this.workers) w.close();
    await this.gw?.close();
  }

  private async openPage(): Promise<void> {
    // Every wait is bounded (navigation, selector, click): a hang fails in seconds, naming the call.
    this.context = boundWaits(await this.browser.newContext({ viewport: { width: 1366, height: 768 } }));
    this.page = await this.context.newPage();
    this.pageErrors = [];
    this.page.on('pageerror', (e) => this.pageErrors.push(`pageerror: ${e.message}`));
    this.page.on('console', (m) => {
      // The browser logs every failed API read (a refused token, a provoked 404, 403 or outage) as a failed
      // resource: the tests provoke those on purpose, and a missing asset would fail them anyway.
      if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) this.pageErrors.push(`console: ${m.text()}`);
    });
  }

  private async closePage(): Promise<void> {
    await closeWithin(this.context, 'the browser context');
    expect(this.pageErrors).toEqual([]);
  }
}
