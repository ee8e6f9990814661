import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { TestGateway, TEST_ADMIN_TOKEN, TEST_SECRET } from '../support/gateway';
import { admin, RawResponse } from '../support/http';

/** A config file the test rewrites between reloads. */
export class ConfigFile {
  readonly path: string;
  constructor(yaml: string) {
    this.path = join(mkdtempSync(join(tmpdir(), 'sb-reload-')), 'config.yaml');
    this.write(yaml);
  }

  write(yaml: string): void {
    writeFileSync(this.path, yaml);
  }
}

/** An admin call with the test token. */
export function call(gw: TestGateway, method: string, path: string, body?: unknown): Promise<RawResponse> {
  return admin(gw.url, method, path, TEST_ADMIN_TOKEN, body);
}

export function reload(gw: TestGateway): Promise<RawResponse> {
  return call(gw, 'POST', '/admin/reload');
}

/** `/admin/providers` by name, without the live counters. */
export async function providers(gw: TestGateway): Promise<Record<string, any>> {
  const res = await call(gw, 'GET', '/admin/providers');
  return Object.fromEntries(res.json.data.map(({ workers_connected: _w, queue_depth: _q, ...p }: any) => [p.name, p]));
}

/** `/admin/tenants`: every tenant with settings of its own, and the defaults. */
export async function tenants(gw: TestGateway): Promise<unknown> {
  return (await call(gw, 'GET', '/admin/tenants')).json;
}

/** The problems `loadConfig` reports for this file with the gateway's test environment (see startGateway). */
export function loadConfigProblems(configFile: string, env: Record<string, string> = {}): string[] {
  try {
    loadConfig({
      LISTEN_ADDR: '127.0.0.1:0',
      WORKER_SECRET: TEST_SECRET,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      DATABASE_URL: 'sqlite::memory:',
      LOG_LEVEL: 'silent',
      SHUTDOWN_DRAIN_TIMEOUT_SECS: '2',
      CONFIG_FILE: configFile,
      ...env,
    });
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}
