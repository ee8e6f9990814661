import { Client } from 'pg';

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

export interface FreshSchema {
  /** DATABASE_URL selecting the schema. */
  url: string;
  drop(): Promise<void>;
}

export async function freshSchema(label: string): Promise<FreshSchema> {
  const schema = `sb_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}_${Date.now().toString(36)}`;
  await withClient((c) => c.query(`CREATE SCHEMA "${schema}"`));
  return {
    url: `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}schema=${schema}`,
    drop: () => withClient((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).then(() => undefined),
  };
}

async function withClient<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
