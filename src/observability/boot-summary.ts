import type { AppConfig } from '../config';
import { parseDatabaseUrl } from '../common/database-url';
import { redisHostPort } from '../common/redis-url';

/** What the boot summary needs to know about a provider (ProvidersService.list() fits). */
export interface ProviderSummaryInput {
  name: string;
  enabled: boolean;
}

export interface BootSummary {
  message: string;
  /** Version and address are in the message, not repeated here. */
  fields: {
    database: string;
    database_location: string;
    providers: string[];
    routing: string;
    api_keys_required: boolean;
    admin_api: boolean;
    redis: string;
  };
}

/** Provider names listed in full up to this many; the rest are counted. */
const MAX_LISTED_PROVIDERS = 12;

/**
 * The one line the gateway logs once it listens (context `Boot`): version, address, database
 * kind and location (never credentials), providers, routing strategy, auth mode and Redis.
 */
export function bootSummary(
  config: AppConfig,
  address: { host: string; port: number },
  providers: readonly ProviderSummaryInput[],
  version: string,
): BootSummary {
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  const listen = `${config.tls ? 'https' : 'http'}://${host}:${address.port}`;
  const db = describeDatabase(config.databaseUrl);
  const names = providers.map((p) => (p.enabled ? p.name : `${p.name}(disabled)`));
  const listed = names.length > MAX_LISTED_PROVIDERS ? [...names.slice(0, MAX_LISTED_PROVIDERS), `+${names.length - MAX_LISTED_PROVIDERS}-more`] : names;
  return {
    message: `switchboard ${version} listening on ${listen}`,
    fields: {
      database: db.kind,
      database_location: db.location,
      providers: listed,
      routing: config.routing.strategy,
      api_keys_required: apiKeysRequired(config),
      admin_api: Boolean(config.adminToken),
      redis: config.redisUrl ? redisHostPort(config.redisUrl) : 'off',
    },
  };
}

/** Kind and location of DATABASE_URL: a file path, or host:port/database (no user, no password). */
export function describeDatabase(databaseUrl: string): { kind: string; location: string } {
  try {
    const target = parseDatabaseUrl(databaseUrl);
    if (target.kind === 'sqlite') return { kind: 'sqlite', location: target.database };
    const url = new URL(target.url);
    const port = url.port || '5432';
    const database = url.pathname.replace(/^\//, '') || '(default)';
    return { kind: 'postgres', location: `${url.hostname}:${port}/${database}${target.schema ? ` schema=${target.schema}` : ''}` };
  } catch {
    return { kind: 'unknown', location: 'unparseable DATABASE_URL' };
  }
}

/** Whether clients must present an API key (`REQUIRE_API_KEYS` or the file's `require_api_keys`). */
export function apiKeysRequired(config: AppConfig): boolean {
  return config.apiKeys?.requireApiKeys === true;
}
