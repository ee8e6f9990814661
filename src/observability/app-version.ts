import { readFileSync } from 'node:fs';
import { join } from 'node:path';

let cached: string | undefined;

/** The package version; package.json sits two levels up from both src/observability and dist/observability. */
export function appVersion(): string {
  if (cached === undefined) {
    try {
      const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version?: unknown };
      cached = typeof pkg.version === 'string' ? pkg.version : 'unknown';
    } catch {
      cached = 'unknown';
    }
  }
  return cached;
}
