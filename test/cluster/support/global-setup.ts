import { ensureBuilt } from './processes';

/**
 * Jest's globalSetup for the cluster tier: `dist/` built once, before any suite runs, when it is
 * missing or older than `src/`. The suites that start `node dist/main.js` check again (a no-op
 * then), but two jest workers never build at the same time, and no suite's beforeAll spends its
 * timeout on the build.
 */
export default function globalSetup(): void {
  ensureBuilt();
}
