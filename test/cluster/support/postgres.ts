import infra = require('../../../bench/lib/cluster-infra.js');

/**
 * The PostgreSQL the cluster suites run on: TEST_DATABASE_URL, which `npm run test:cluster` sets
 * (`npm test` does not run this folder). Run by hand without it, a suite says why it skips. Each
 * suite gets a fresh schema of it, dropped afterwards.
 */
export const POSTGRES_URL = process.env.TEST_DATABASE_URL || '';

/** Prints why a suite does not run (never a silent skip). */
export function describeWithPostgres(name: string, fn: () => void): void {
  if (POSTGRES_URL) {
    describe(name, fn);
    return;
  }
  describe(name, () => {
    it.skip('needs PostgreSQL: set TEST_DATABASE_URL (npm run test:cluster does)', () => undefined);
  });
  process.stderr.write(`${name}: skipped, no TEST_DATABASE_URL (npm run test:cluster sets one)\n`);
}

/** `schema` its name; `url` (DATABASE_URL) selects it. */
export type FreshSchema = infra.Schema;

/** A schema of its own for a suite (the benchmark's helper, bench/lib/cluster-infra.js, with a name unique to this run). */
export function freshSchema(label: string): Promise<FreshSchema> {
  const schema = `sb_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}_${Date.now().toString(36)}`;
  return infra.freshSchema(schema, POSTGRES_URL);
}
