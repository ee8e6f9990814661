import { loadConfig } from '../config';
import { apiKeysRequired, bootSummary, describeDatabase } from './boot-summary';

describe('bootSummary', () => {
  it('says version, address, database, providers, routing, auth mode and Redis in one line', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://sb:pa55word@db.internal:6543/switchboard?schema=gw',
      REDIS_URL: 'redis://:r3dis-pass@cache.internal:6380/2',
      ADMIN_TOKEN: 'admin-t0ken',
      ROUTING_STRATEGY: 'round_robin',
    });
    const s = bootSummary(
      config,
      { host: '0.0.0.0', port: 8080 },
      [
        { name: 'local', enabled: true },
        { name: 'gpu', enabled: false },
      ],
      '1.2.3',
    );
    expect(s.message).toBe('switchboard 1.2.3 listening on http://0.0.0.0:8080');
    expect(s.fields).toEqual({
      database: 'postgres',
      database_location: 'db.internal:6543/switchboard schema=gw',
      providers: ['local', 'gpu(disabled)'],
      routing: 'round_robin',
      api_keys_required: false,
      admin_api: true,
      redis: 'cache.internal:6380',
    });
    const printed = JSON.stringify(s);
    for (const secret of ['pa55word', 'r3dis-pass', 'admin-t0ken', 'sb:']) expect(printed).not.toContain(secret);
  });

  it('brackets IPv6 hosts and counts providers beyond the first twelve', () => {
    const config = loadConfig({});
    const providers = Array.from({ length: 15 }, (_, i) => ({ name: `p${i}`, enabled: true }));
    const s = bootSummary(config, { host: '::1', port: 9000 }, providers, '0.1.0');
    expect(s.message).toContain('http://[::1]:9000');
    expect(s.fields.providers).toHaveLength(13);
    expect(s.fields.providers[12]).toBe('+3-more');
    expect(s.fields).toMatchObject({ database: 'sqlite', database_location: './data/switchboard.db', redis: 'off', admin_api: false });
  });
});

describe('describeDatabase', () => {
  it('shows where the database is, never who connects to it', () => {
    expect(describeDatabase('sqlite:/data/switchboard.db')).toEqual({ kind: 'sqlite', location: '/data/switchboard.db' });
    expect(describeDatabase('sqlite::memory:')).toEqual({ kind: 'sqlite', location: ':memory:' });
    expect(describeDatabase('postgresql://u:p@pg/db')).toEqual({ kind: 'postgres', location: 'pg:5432/db' });
    expect(describeDatabase('mysql://x')).toEqual({ kind: 'unknown', location: 'unparseable DATABASE_URL' });
  });
});

describe('apiKeysRequired', () => {
  it('follows REQUIRE_API_KEYS and its ModelRelay alias; off by default', () => {
    expect(apiKeysRequired(loadConfig({}))).toBe(false);
    expect(apiKeysRequired(loadConfig({ REQUIRE_API_KEYS: 'true' }))).toBe(true);
    expect(apiKeysRequired(loadConfig({ MODELRELAY_REQUIRE_API_KEYS: 'true' }))).toBe(true);
  });
});
