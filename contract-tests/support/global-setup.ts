import { spawnGateway, SpawnedGateway } from './server';
import { Target } from './target';
import { uid } from './util';

declare global {
  var __CONTRACT_GATEWAY__: SpawnedGateway | undefined;

  var __CONTRACT_CLEANUP__: (() => Promise<void>) | undefined;
}

const SECOND_SECRET = 'second-provider-secret';
const DISABLED_SECRET = 'disabled-provider-secret';
const DISABLED_MODEL = 'ct-disabled-only-model';

/** Settings of the suite-owned gateway (documented in README.md). */
export const OWN_SERVER_ENV: Record<string, string> = {
  HEARTBEAT_INTERVAL_SECS: '0.2',
  HEARTBEAT_TIMEOUT_SECS: '0.6',
  MAX_STREAM_BYTES: '65536',
  MAX_REQUEUES: '3',
};

const OWN_CONFIG_YAML = `# written by contract-tests/support/global-setup.ts
providers:
  - name: second
    secret: ${SECOND_SECRET}
  - name: disabled
    secret: ${DISABLED_SECRET}
    enabled: false
    models: [${DISABLED_MODEL}]
`;

async function adminCall(url: string, token: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export default async function globalSetup(): Promise<void> {
  const external = process.env.SWITCHBOARD_URL;
  let t: Target;
  if (external) {
    const url = external.replace(/\/+$/, '');
    const adminToken = process.env.SWITCHBOARD_ADMIN_TOKEN ?? '';
    const workerSecret = process.env.SWITCHBOARD_WORKER_SECRET ?? '';
    if (!adminToken || !workerSecret) {
      throw new Error('SWITCHBOARD_URL is set: SWITCHBOARD_WORKER_SECRET and SWITCHBOARD_ADMIN_TOKEN are required too');
    }
    // The second and the disabled provider are created through the admin API for this run.
    const suffix = uid();
    const second = { name: `ct-second-${suffix}`, secret: `${SECOND_SECRET}-${suffix}` };
    const disabled = { name: `ct-disabled-${suffix}`, secret: `${DISABLED_SECRET}-${suffix}`, model: `${DISABLED_MODEL}-${suffix}` };
    for (const [p, extra] of [
      [second, {}],
      [disabled, { enabled: false, models: [disabled.model] }],
    ] as const) {
      const res = await adminCall(url, adminToken, 'POST', '/admin/providers', { name: p.name, secret: p.secret, ...extra });
      if (res.status !== 201 && res.status !== 200) {
        throw new Error(`could not create provider ${p.name} on ${url}: ${res.status} ${await res.text()}`);
      }
    }
    globalThis.__CONTRACT_CLEANUP__ = async () => {
      for (const name of [second.name, disabled.name]) await adminCall(url, adminToken, 'DELETE', `/admin/providers/${name}`).catch(() => undefined);
    };
    const secs = (key: string, fallback: number) => Math.round(Number(process.env[key] ?? fallback) * 1000);
    t = {
      url,
      wsUrl: `${url.replace(/^http/, 'ws')}/v1/worker/connect`,
      workerSecret,
      defaultProvider: process.env.SWITCHBOARD_PROVIDER ?? 'local',
      adminToken,
      second,
      disabled,
      external: true,
      heartbeatIntervalMs: secs('SWITCHBOARD_HEARTBEAT_INTERVAL_SECS', 15),
      heartbeatTimeoutMs: secs('SWITCHBOARD_HEARTBEAT_TIMEOUT_SECS', 45),
      maxRequeues: Number(process.env.SWITCHBOARD_MAX_REQUEUES ?? 3),
      maxStreamBytes: Number(process.env.SWITCHBOARD_MAX_STREAM_BYTES ?? 256 * 1024 * 1024),
    };
  } else {
    const gw = await spawnGateway({ env: OWN_SERVER_ENV, configYaml: OWN_CONFIG_YAML, label: 'shared' });
    globalThis.__CONTRACT_GATEWAY__ = gw;
    t = {
      url: gw.url,
      wsUrl: gw.wsUrl,
      workerSecret: gw.env.WORKER_SECRET,
      defaultProvider: gw.env.PROVIDER_NAME,
      adminToken: gw.env.ADMIN_TOKEN,
      second: { name: 'second', secret: SECOND_SECRET },
      disabled: { name: 'disabled', secret: DISABLED_SECRET, model: DISABLED_MODEL },
      external: false,
      heartbeatIntervalMs: Number(gw.env.HEARTBEAT_INTERVAL_SECS) * 1000,
      heartbeatTimeoutMs: Number(gw.env.HEARTBEAT_TIMEOUT_SECS) * 1000,
      maxRequeues: Number(gw.env.MAX_REQUEUES),
      maxStreamBytes: Number(gw.env.MAX_STREAM_BYTES),
    };
  }
  process.env.CONTRACT_TARGET = JSON.stringify(t);
}
