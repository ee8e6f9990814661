/** Where DATABASE_URL points. Pure (no TypeORM), so configuration can validate it at boot. */
export type DatabaseTarget = { kind: 'sqlite'; database: string; enableWAL: boolean } | { kind: 'postgres'; url: string; schema?: string };

/** Parses DATABASE_URL; throws an Error whose message names the problem. */
export function parseDatabaseUrl(databaseUrl: string): DatabaseTarget {
  if (databaseUrl.startsWith('sqlite:')) return { kind: 'sqlite', ...sqliteLocation(databaseUrl) };
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    const { url, schema } = splitSchemaParam(databaseUrl);
    return { kind: 'postgres', url, schema };
  }
  throw new Error('DATABASE_URL must start with sqlite:, postgres:// or postgresql://');
}

function sqliteLocation(databaseUrl: string): { database: string; enableWAL: boolean } {
  const rest = databaseUrl.slice('sqlite:'.length);
  if (rest === ':memory:' || rest === '//:memory:') return { database: ':memory:', enableWAL: false };
  const path = rest.startsWith('//') ? rest.slice(2) : rest;
  if (path === '') throw new Error('DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/switchboard.db');
  // WAL lets readers (health checks, admin listings) proceed while a batch is being written.
  return { database: path, enableWAL: true };
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function splitSchemaParam(databaseUrl: string): { url: string; schema?: string } {
  let parsed: URL;
  try {
    parsed = new URL(databaseUrl);
  } catch {
    throw new Error('DATABASE_URL is not a valid postgres:// URL');
  }
  const schema = parsed.searchParams.get('schema') ?? undefined;
  if (schema === undefined) return { url: databaseUrl };
  if (!SCHEMA_NAME.test(schema)) throw new Error(`DATABASE_URL schema "${schema}" must be a lower-case SQL identifier`);
  parsed.searchParams.delete('schema');
  return { url: parsed.toString(), schema };
}
