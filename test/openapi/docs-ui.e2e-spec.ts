import type { Browser } from 'playwright-core';
import { DOCS_PATH, OPENAPI_PATH } from '../../src/openapi/openapi.setup';
import { boundWaits, closeWithin, describeWithBrowser, launch } from '../dashboard/browser';
import { startGateway, TestGateway } from '../support/gateway';
import { operations } from './openapi-check';

const CONTENT_TYPES: Record<string, RegExp> = {
  '.css': /^text\/css/,
  '.js': /^application\/javascript/,
  '.png': /^image\/png/,
};

describe('Swagger UI (GET /docs), served by the gateway', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(() => gw.close());

  it('answers an HTML page whose every asset is served by the gateway (no CDN): each answers 200 with its type', async () => {
    const res = await fetch(`${gw.url}${DOCS_PATH}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await res.text();
    expect(html).not.toMatch(/https?:\/\//);
    const refs = [...html.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]);
    expect(refs).toEqual(expect.arrayContaining(['docs/swagger-ui.css', 'docs/swagger-ui-bundle.js', 'docs/swagger-ui-init.js']));
    for (const ref of refs) {
      const url = new URL(ref, `${gw.url}${DOCS_PATH}`);
      expect(url.origin).toBe(gw.url);
      const asset = await fetch(url);
      const body = Buffer.from(await asset.arrayBuffer());
      expect([ref, asset.status]).toEqual([ref, 200]);
      expect(body.length).toBeGreaterThan(0);
      expect(asset.headers.get('content-type')).toMatch(CONTENT_TYPES[ref.slice(ref.lastIndexOf('.'))]);
    }
  });

  it('the UI loads the document from the gateway (relative to the page) and asks no outside validator', async () => {
    const init = await (await fetch(`${gw.url}${DOCS_PATH}/swagger-ui-init.js`)).text();
    const documentUrl = /url: "([^"]+)"/.exec(init)?.[1];
    expect(documentUrl).toBe('openapi.json');
    expect(init).toContain('validatorUrl: null');
    expect(init).not.toMatch(/https?:\/\//);
    const resolved = new URL(documentUrl!, `${gw.url}${DOCS_PATH}`);
    expect(resolved.href).toBe(`${gw.url}${OPENAPI_PATH}`);
    expect((await fetch(resolved)).status).toBe(200);
  });

  it('/docs/ redirects to /docs (the relative asset URLs resolve from /docs)', async () => {
    const res = await fetch(`${gw.url}${DOCS_PATH}/`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(new URL(res.headers.get('location')!, `${gw.url}${DOCS_PATH}/`).href).toBe(`${gw.url}${DOCS_PATH}`);
  });

  it('serves only its own assets under /docs: other names are 404', async () => {
    for (const path of ['/docs/index.html', '/docs/swagger-initializer.js', '/docs/../package.json', '/docs/%2e%2e/package.json']) {
      expect([path, (await fetch(`${gw.url}${path}`)).status]).toEqual([path, 404]);
    }
  });
});

describeWithBrowser('Swagger UI in a headless browser', (executablePath) => {
  let gw: TestGateway;
  let browser: Browser;
  beforeAll(async () => {
    gw = await startGateway();
    browser = await launch(executablePath);
  });
  afterAll(async () => {
    if (browser) await closeWithin(browser, 'Chromium');
    await gw?.close();
  });

  it('renders every operation, with no request leaving the gateway and no console error', async () => {
    const doc = await (await fetch(`${gw.url}${OPENAPI_PATH}`)).json();
    const count = operations(doc).length;
    const page = boundWaits(await browser.newPage());
    const outside: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(`${gw.url}/`) && !r.url().startsWith('data:')) outside.push(r.url());
    });
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${gw.url}${DOCS_PATH}`);
    // A locator wait, not waitForFunction: the page's CSP forbids eval, which a polled string predicate needs.
    await page
      .locator('.opblock')
      .nth(count - 1)
      .waitFor({ state: 'attached', timeout: 20000 });
    expect(await page.locator('.opblock').count()).toBe(count);
    expect(await page.locator('.info .title').innerText()).toContain('Switchboard');
    await closeWithin(page, 'the Swagger UI page');
    expect(outside).toEqual([]);
    expect(errors).toEqual([]);
  });
});
