import { accessSync, constants, mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { chromium, Browser, BrowserContext, Page } from 'playwright-core';
import { CLOSE_MS, START_MS, WAIT_MS, withDeadline } from '../support/deadline';

/** Where the browser tests leave their screenshots (git-ignored). */
export const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts', 'dashboard');

/**
 * The Chromium to drive: $CHROMIUM_PATH, Debian's /usr/bin/chromium, or one on PATH. `.ci/run`
 * installs Debian's package when it is missing.
 */
export function findChromium(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium'];
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    for (const name of ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']) candidates.push(join(dir, name));
  }
  for (const c of candidates) {
    if (!c) continue;
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // next
    }
  }
  return undefined;
}

/**
 * `describe` when a Chromium exists, else `describe.skip` with a message saying why. Where the
 * browser is required (DASHBOARD_BROWSER_REQUIRED=1, set by .ci/run) a missing one fails instead.
 */
export function describeWithBrowser(name: string, fn: (executablePath: string) => void): void {
  const executablePath = findChromium();
  if (executablePath) {
    describe(name, () => fn(executablePath));
    return;
  }
  if (process.env.DASHBOARD_BROWSER_REQUIRED === '1') {
    describe(name, () => {
      it('needs a Chromium', () => {
        throw new Error(
          'No Chromium found (CHROMIUM_PATH, /usr/bin/chromium or PATH) and DASHBOARD_BROWSER_REQUIRED=1: install it (apt-get install -y chromium)',
        );
      });
    });
    return;
  }

  console.warn(`SKIPPED "${name}": no Chromium binary found (set CHROMIUM_PATH, or apt-get install -y chromium)`);
  describe.skip(name, () => fn(''));
}

/** Playwright's launch waits 3 minutes by default; a start slower than START_MS is a hang. */
export function launch(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    timeout: START_MS,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
}

/**
 * Every Playwright wait in `target` (navigations, selectors, clicks) fails after WAIT_MS with
 * Playwright's message naming the call (e.g. "page.goto: Timeout 20000ms exceeded").
 * `page.evaluate` has no such timeout: wrap a long one in withDeadline.
 */
export function boundWaits<T extends BrowserContext | Page>(target: T): T {
  target.setDefaultTimeout(WAIT_MS);
  target.setDefaultNavigationTimeout(WAIT_MS);
  return target;
}

/** Closes a context, page or browser, or fails naming it. */
export function closeWithin(target: Browser | BrowserContext | Page, what: string): Promise<void> {
  return withDeadline(target.close(), CLOSE_MS, `${what} did not close`);
}

/** A full-page screenshot under test-artifacts/dashboard/. */
export async function screenshot(page: Page, name: string, fullPage = false): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage });
  return path;
}
