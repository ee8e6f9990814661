import { Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';

/** What the page is made of: served as they are, no bundler. */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export interface DashboardAsset {
  body: Buffer;
  contentType: string;
  etag: string;
}

/**
 * Where the page's files are: `public/` next to this module — `src/dashboard/public` when the
 * gateway runs from sources (tests through ts-jest), `dist/dashboard/public` when it runs from the
 * build (`npm run build` copies it there).
 */
export const DASHBOARD_PUBLIC_DIR = join(__dirname, 'public');

/**
 * The dashboard's static files, read once at boot and kept in memory (a few tens of kilobytes):
 * only files of the directory itself with a known type are served, so a request can never name
 * anything else on disk.
 */
@Injectable()
export class DashboardAssets {
  private readonly log = new Logger('Dashboard');
  private readonly files = new Map<string, DashboardAsset>();

  constructor() {
    this.load(DASHBOARD_PUBLIC_DIR);
  }

  private missingLogged = false;

  /** The file, or undefined when there is no such file (or the build lacks the assets). */
  get(name: string): DashboardAsset | undefined {
    return this.files.get(name);
  }

  /**
   * Whether the page is part of this build. Told in the log once, when someone asks for the page
   * (a gateway built without it serves everything else; its boot stays quiet).
   */
  available(): boolean {
    if (this.files.has('index.html')) return true;
    if (!this.missingLogged) {
      this.missingLogged = true;
      this.log.warn(`the dashboard's files are not in ${DASHBOARD_PUBLIC_DIR}: /dashboard answers 503 (npm run build copies src/dashboard/public there)`);
    }
    return false;
  }

  private load(dir: string): void {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const contentType = CONTENT_TYPES[extname(entry.name)];
      if (!entry.isFile() || !contentType) continue;
      const body = readFileSync(join(dir, entry.name));
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
      this.files.set(entry.name, { body, contentType, etag });
    }
  }
}
