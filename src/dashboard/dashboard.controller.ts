import { Controller, Get, Headers, Param, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DashboardAsset, DashboardAssets } from './dashboard-assets';

/**
 * The page may load only its own scripts and styles and talk only to this origin; no inline
 * script, no framing, no form posted anywhere (the login form is handled by script).
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  // Revalidated on every load (ETag): a new build is picked up at once.
  'cache-control': 'no-cache',
};

/**
 * The built-in operator dashboard: `GET /dashboard` (the page) and `GET /dashboard/assets/:file`
 * (its scripts and styles). None of it needs the admin token and none of it carries data: the page
 * asks for the token and reads the documented admin API with it (docs/dashboard.md).
 */
@ApiExcludeController() // a page, not part of the HTTP API the OpenAPI document describes
@Controller('dashboard')
export class DashboardController {
  constructor(private readonly assets: DashboardAssets) {}

  @Get()
  page(@Headers('if-none-match') ifNoneMatch: string | undefined, @Res() reply: FastifyReply): void {
    const index = this.assets.available() ? this.assets.get('index.html') : undefined;
    if (!index) {
      reply
        .code(503)
        .headers(SECURITY_HEADERS)
        .type('text/plain; charset=utf-8')
        .send('The dashboard is not part of this build: run `npm run build`, which copies src/dashboard/public to dist/dashboard/public.\n');
      return;
    }
    send(reply, index, ifNoneMatch);
  }

  @Get('assets/:file')
  asset(@Param('file') file: string, @Headers('if-none-match') ifNoneMatch: string | undefined, @Res() reply: FastifyReply): void {
    const asset = file === 'index.html' ? undefined : this.assets.get(file);
    if (!asset) {
      reply.code(404).headers(SECURITY_HEADERS).type('text/plain; charset=utf-8').send('Not found\n');
      return;
    }
    send(reply, asset, ifNoneMatch);
  }
}

function send(reply: FastifyReply, asset: DashboardAsset, ifNoneMatch: string | undefined): void {
  reply.headers(SECURITY_HEADERS).header('etag', asset.etag);
  if (ifNoneMatch && ifNoneMatch.split(',').some((tag) => tag.trim() === asset.etag)) {
    reply.code(304).send();
    return;
  }
  reply.code(200).type(asset.contentType).send(asset.body);
}
