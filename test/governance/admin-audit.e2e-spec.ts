import { startRecordingGateway, RegisteredRoute } from '../openapi/support';
import { TEST_ADMIN_TOKEN, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { ConfigFile } from '../reload/support';

/**
 * Issue 21, "Audit trail": every mutating admin route — found by walking the routes the gateway
 * really serves — writes a row with the actor, role, source address, correlation id, action,
 * target and outcome, and no secret. A route added without a recipe here fails the walk.
 */
const MUTATING = new Set(['post', 'put', 'patch', 'delete']);
const LIFECYCLE_PATHS = ['/v1/models/load', '/v1/models/unload', '/v1/cache/flush'];
const isAdminMutation = (r: RegisteredRoute) =>
  MUTATING.has(r.method) && (r.path.startsWith('/admin/') || /^\/v1\/pools\/\{id\}\/(drain|undrain|reload)$/.test(r.path) || LIFECYCLE_PATHS.includes(r.path));

const PROVIDER_SECRET = 'provider-secret-do-not-log-1';
const PROVIDER_SECRET_2 = 'provider-secret-do-not-log-2';
const OP_TOKEN = 'op-token-do-not-log.eyJzaWduZXJzIjpbXX0';

interface Recipe {
  /** Concrete path (ids filled in when run). */
  path: () => string;
  body?: unknown;
  action: string;
  target: () => string | null;
  status: number;
}

describe('audit trail of every admin mutation (route table walk)', () => {
  let gw: TestGateway;
  let routes: RegisteredRoute[];
  let file: ConfigFile;
  let worker: ScriptedWorker;
  let workerId = '';
  let keyId = '';
  let createdKey = '';

  beforeAll(async () => {
    file = new ConfigFile('providers:\n  - name: local\n    secret: test-worker-secret\n');
    ({ gw, routes } = await startRecordingGateway({ CONFIG_FILE: file.path }));
    ({ worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['m1'], worker_name: 'gpu-1' }));
    const workers = await send('GET', '/admin/workers');
    workerId = workers.json.data[0].id;
  });
  afterAll(async () => {
    worker?.ws.close();
    await gw.close();
  });

  let seq = 0;
  async function send(method: string, path: string, body?: unknown, correlationId = `audit-walk-${++seq}`) {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json', 'x-correlation-id': correlationId },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined, correlationId };
  }

  // In the order they run: creations before their updates and deletions.
  const recipes: Record<string, Recipe> = {
    'post /admin/keys': { path: () => '/admin/keys', body: { name: 'k1', tenant: 'team-a' }, action: 'keys.create', target: () => keyId, status: 201 },
    'patch /admin/keys/{id}': { path: () => `/admin/keys/${keyId}`, body: { rpm: 5 }, action: 'keys.update', target: () => keyId, status: 200 },
    'delete /admin/keys/{id}': { path: () => `/admin/keys/${keyId}`, action: 'keys.delete', target: () => keyId, status: 200 },
    'put /admin/tenants/{id}': { path: () => '/admin/tenants/team-b', body: { rpm: 10 }, action: 'tenants.put', target: () => 'team-b', status: 200 },
    'delete /admin/tenants/{id}': { path: () => '/admin/tenants/team-b', action: 'tenants.delete', target: () => 'team-b', status: 200 },
    'post /admin/providers': {
      path: () => '/admin/providers',
      body: { name: 'p2', secret: PROVIDER_SECRET },
      action: 'providers.create',
      target: () => 'p2',
      status: 201,
    },
    'patch /admin/providers/{name}': {
      path: () => '/admin/providers/p2',
      body: { secret: PROVIDER_SECRET_2, priority: 3 },
      action: 'providers.update',
      target: () => 'p2',
      status: 200,
    },
    'delete /admin/providers/{name}': { path: () => '/admin/providers/p2', action: 'providers.delete', target: () => 'p2', status: 200 },
    'post /admin/workers/{id}/refresh-models': {
      path: () => `/admin/workers/${workerId}/refresh-models`,
      action: 'workers.refresh-models',
      target: () => workerId,
      status: 202,
    },
    'post /admin/workers/{id}/drain': {
      path: () => `/admin/workers/${workerId}/drain`,
      body: {},
      action: 'workers.drain',
      target: () => workerId,
      status: 202,
    },
    'post /admin/workers/{id}/undrain': { path: () => `/admin/workers/${workerId}/undrain`, action: 'workers.undrain', target: () => workerId, status: 200 },
    'post /v1/pools/{id}/reload': {
      path: () => '/v1/pools/local/reload',
      body: { models: ['m1'] },
      action: 'pools.reload',
      target: () => 'local',
      status: 200,
    },
    'post /v1/pools/{id}/drain': {
      path: () => '/v1/pools/local/drain',
      body: { deadline_ms: 1000 },
      action: 'pools.drain',
      target: () => 'local',
      status: 202,
    },
    'post /v1/pools/{id}/undrain': { path: () => '/v1/pools/local/undrain', action: 'pools.undrain', target: () => 'local', status: 200 },
    'post /admin/reload': { path: () => '/admin/reload', action: 'config.reload', target: () => 'config', status: 200 },
    // Lifecycle operations are off here: refused, and still audited (with the actor), the op token never stored.
    'post /v1/models/load': {
      path: () => '/v1/models/load',
      body: { modelId: 'm1', verifiedOpToken: OP_TOKEN },
      action: 'lifecycle.model-load',
      target: () => null,
      status: -1,
    },
    'post /v1/models/unload': {
      path: () => '/v1/models/unload',
      body: { modelId: 'm1', verifiedOpToken: OP_TOKEN },
      action: 'lifecycle.model-unload',
      target: () => null,
      status: -1,
    },
    'post /v1/cache/flush': {
      path: () => '/v1/cache/flush',
      body: { verifiedOpToken: OP_TOKEN },
      action: 'lifecycle.cache-flush',
      target: () => null,
      status: -1,
    },
  };

  it('finds every mutating admin route in the route table, and a recipe for each', () => {
    const found = routes
      .filter(isAdminMutation)
      .map((r) => `${r.method} ${r.path}`)
      .sort();
    expect(found).toEqual(Object.keys(recipes).sort());
  });

  it('each one writes a row with the admin-token actor, its role, address, correlation id, action and target, and no secret', async () => {
    const sent: Array<{ key: string; correlationId: string; status: number }> = [];
    for (const [key, recipe] of Object.entries(recipes)) {
      const res = await send(key.split(' ')[0].toUpperCase(), recipe.path(), recipe.body);
      if (recipe.status > 0) expect({ key, status: res.status }).toEqual({ key, status: recipe.status });
      if (key === 'post /admin/keys') {
        keyId = res.json.id;
        createdKey = res.json.key;
      }
      sent.push({ key, correlationId: res.correlationId, status: res.status });
    }
    const audit = await send('GET', '/admin/audit?limit=1000');
    expect(audit.status).toBe(200);
    const rows: Array<Record<string, any>> = audit.json.data;
    for (const { key, correlationId, status } of sent) {
      const recipe = recipes[key];
      const row = rows.find((r) => r.correlation_id === correlationId);
      expect({ key, row }).toMatchObject({
        key,
        row: { action: recipe.action, actor: { kind: 'admin-token', subject: 'admin-token' }, role: 'admin', source_address: '127.0.0.1', status },
      });
      if (recipe.target() !== null) expect({ key, target: row!.target_id }).toEqual({ key, target: recipe.target() });
      expect(row!.outcome).toBe(status < 300 ? (recipe.action.startsWith('lifecycle.') ? 'accepted' : 'completed') : 'refused');
    }
    const text = JSON.stringify(rows);
    for (const secret of [PROVIDER_SECRET, PROVIDER_SECRET_2, OP_TOKEN, TEST_ADMIN_TOKEN, createdKey]) expect(text).not.toContain(secret);
    // What changed is summarised: that the provider's secret changed, not its value.
    const update = rows.find((r) => r.action === 'providers.update')!;
    expect(update.summary).toEqual({ secret: '[redacted]', priority: 3 });
  });

  it('GET /admin/audit filters by actor, action, target and time, and pages', async () => {
    await send('PUT', '/admin/tenants/team-f', { rpm: 1 });
    await send('PUT', '/admin/tenants/team-g', { rpm: 2 });
    const byTarget = await send('GET', '/admin/audit?action=tenants.put&target=team-f&actor=admin-token');
    expect(byTarget.json.data.map((r: any) => r.target_id)).toEqual(['team-f']);
    expect((await send('GET', '/admin/audit?actor=sso-user-1')).json.data).toEqual([]);
    const page1 = await send('GET', '/admin/audit?action=tenants.put&limit=1');
    expect(page1.json.data.map((r: any) => r.target_id)).toEqual(['team-g']);
    const page2 = await send('GET', `/admin/audit?action=tenants.put&limit=1&before=${page1.json.next_before}`);
    expect(page2.json.data.map((r: any) => r.target_id)).toEqual(['team-f']);
    const future = await send('GET', `/admin/audit?action=tenants.put&since=${Date.now() + 60_000}`);
    expect(future.json.data).toEqual([]);
    expect((await send('GET', '/admin/audit?action=Not+An+Action')).status).toBe(400);
  });

  it('a refused mutation (its body fails validation) is written too, with the refusal and without the secret it carried', async () => {
    const res = await send('POST', '/admin/providers', { name: 'bad name!', secret: 'refused-secret-do-not-log', max_queue_len: -1 });
    expect(res.status).toBeGreaterThanOrEqual(400);
    const [row] = (await send('GET', '/admin/audit?action=providers.create&limit=1')).json.data;
    expect(row).toMatchObject({ correlation_id: res.correlationId, outcome: 'refused', status: res.status, actor: { subject: 'admin-token' } });
    expect(row.error_code).toBe(res.json.error.code);
    expect(JSON.stringify(row)).not.toContain('refused-secret-do-not-log');
  });

  it('a SIGHUP reload is written with the actor sighup', async () => {
    file.write('providers:\n  - name: local\n    secret: test-worker-secret\n  - name: hup\n    secret: hup-secret-do-not-log\n');
    process.emit('SIGHUP', 'SIGHUP');
    let row: Record<string, any> | undefined;
    for (let i = 0; i < 100 && !row; i++) {
      row = (await send('GET', '/admin/audit?actor=sighup')).json.data[0];
      if (!row) await new Promise((r) => setTimeout(r, 50));
    }
    expect(row).toMatchObject({
      action: 'config.reload',
      actor: { kind: 'sighup', subject: 'sighup' },
      role: 'admin',
      target_id: 'config',
      outcome: 'completed',
    });
    expect(row!.summary.changes.providers.added).toEqual(['hup']);
    expect(JSON.stringify(row)).not.toContain('hup-secret-do-not-log');
  });
});
