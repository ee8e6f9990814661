import { startGateway, TestGateway, TEST_ADMIN_TOKEN, TEST_SECRET } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { admin, chat, eventually, post } from '../support/http';
import { autoRespond, workerView, writeConfig } from '../support/routing';

/**
 * H2: providers own their models. Three pools: `local` lists `secret-model` and the glob
 * `local-*`, `team` lists only the glob `team-*`, `p2` lists nothing (any model nobody owns).
 */
const CONFIG = `
providers:
  - name: local
    secret: ${TEST_SECRET}
    models: [secret-model, "local-*"]
    queue_timeout_secs: 1
  - name: team
    secret: team-secret
    models: ["team-*"]
  - name: p2
    secret: p2-secret
`;

const P2 = { provider: 'p2', secret: 'p2-secret' };
const TEAM = { provider: 'team', secret: 'team-secret' };
const CLIENT_AUTH = 'Bearer client-credential-for-the-backend-7f3a';

async function sendMany(gw: TestGateway, model: string, n: number, headers: Record<string, string> = {}): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await post(gw.url, '/v1/chat/completions', chat(model, { i }), headers)).status);
  return statuses;
}

/** Every frame the worker received, as text: nothing of another pool's traffic may appear in it. */
const seen = (w: ScriptedWorker) => JSON.stringify(w.frames);

describe('hardening: providers own their models (H2)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ CONFIG_FILE: writeConfig(CONFIG) });
  });
  afterAll(() => gw.close());

  it('the H2 attack: a p2 worker with models ["*"] and priority 0 gets 0 of 10 requests for local\'s model and never sees the authorization header', async () => {
    const owner = await ScriptedWorker.register(gw.workerUrl, { models: ['secret-model'], max_concurrent: 4 });
    const hijacker = await ScriptedWorker.register(gw.workerUrl, { models: ['*'], max_concurrent: 64, priority: 0 }, P2);
    autoRespond(owner.worker);
    autoRespond(hijacker.worker);
    expect(await sendMany(gw, 'secret-model', 10, { authorization: CLIENT_AUTH })).toEqual(Array(10).fill(200));
    expect(owner.worker.count('request')).toBe(10);
    expect(hijacker.worker.count('request')).toBe(0);
    expect(seen(hijacker.worker)).not.toContain('client-credential-for-the-backend');
    // The owner did get the client's header: it is the backend the client meant to reach.
    expect(owner.worker.frames.find((f) => f.type === 'request')!.headers.authorization).toBe(CLIENT_AUTH);

    // With the owner gone, the request waits for local's workers (a declared model) and times
    // out: it never falls to the wildcard worker of another pool.
    owner.worker.close();
    await owner.worker.closed;
    const res = await post(gw.url, '/v1/chat/completions', chat('secret-model'), { authorization: CLIENT_AUTH });
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(hijacker.worker.count('request')).toBe(0);
    hijacker.worker.close();
  });

  it("a p2 worker advertising local's model by name has it dropped from its register_ack, with a warning, and gets none of its requests", async () => {
    const owner = await ScriptedWorker.register(gw.workerUrl, { models: ['secret-model'], max_concurrent: 4 });
    const claimant = await ScriptedWorker.register(gw.workerUrl, { models: ['secret-model', 'local-7b', 'free-model'], max_concurrent: 4, priority: 0 }, P2);
    expect(claimant.ack.models).toEqual(['free-model']);
    expect(claimant.ack.warnings).toEqual([expect.stringMatching(/dropped 2 models provider "p2" may not serve.*"secret-model", "local-7b"/)]);
    autoRespond(owner.worker);
    autoRespond(claimant.worker);
    expect(await sendMany(gw, 'secret-model', 5)).toEqual(Array(5).fill(200));
    expect(claimant.worker.count('request')).toBe(0);
    // What it may serve, it serves: p2 lists nothing, so any model nobody owns is fine.
    expect(await sendMany(gw, 'free-model', 2)).toEqual([200, 200]);
    expect(claimant.worker.count('request')).toBe(2);
    owner.worker.close();
    claimant.worker.close();
  });

  it('a glob allow-list: the ack keeps what the provider allows, its "*" serves any model the glob matches and nothing else', async () => {
    const member = await ScriptedWorker.register(gw.workerUrl, { models: ['team-a', 'other', '*'], max_concurrent: 4 }, TEAM);
    expect(member.ack.models).toEqual(['team-a', '*']);
    expect(member.ack.warnings).toEqual([
      expect.stringMatching(/dropped 1 model provider "team" may not serve.*"other"/),
      '"*" stands for the models provider "team" allows',
    ]);
    const wildcard = await ScriptedWorker.register(gw.workerUrl, { models: ['*'], max_concurrent: 4, priority: 0 }, P2);
    autoRespond(member.worker);
    autoRespond(wildcard.worker);
    // team-b is not declared but matches team's glob: team's `*` serves it, p2's never does.
    expect(await sendMany(gw, 'team-b', 4)).toEqual(Array(4).fill(200));
    expect(member.worker.count('request')).toBe(4);
    expect(wildcard.worker.count('request')).toBe(0);
    // A model nobody lists goes to the unrestricted pool's `*`, never to team (outside its allow-list).
    expect(await sendMany(gw, 'unlisted-model', 3)).toEqual(Array(3).fill(200));
    expect(wildcard.worker.count('request')).toBe(3);
    expect(member.worker.count('request')).toBe(4);
    member.worker.close();
    wildcard.worker.close();
  });

  it('models_update is intersected with the allow-list too', async () => {
    const member = await ScriptedWorker.register(gw.workerUrl, { models: ['team-a'], max_concurrent: 2 }, TEAM);
    member.worker.send({ type: 'models_update', models: ['team-x', 'secret-model', 'stray'], current_load: 0 });
    await eventually(async () => (await workerView(gw, member.ack.worker_id)).models.includes('team-x'));
    expect((await workerView(gw, member.ack.worker_id)).models).toEqual(['team-x']);
    member.worker.close();
  });

  it("a provider without models keeps today's behaviour: its workers serve any model nobody lists", async () => {
    const plain = await ScriptedWorker.register(gw.workerUrl, { models: ['plain-a', 'plain-b'], max_concurrent: 2 }, P2);
    expect(plain.ack.models).toEqual(['plain-a', 'plain-b']);
    expect(plain.ack.warnings).toBeUndefined();
    autoRespond(plain.worker);
    expect(await sendMany(gw, 'plain-a', 2)).toEqual([200, 200]);
    expect(await sendMany(gw, 'plain-b', 1)).toEqual([200]);
    expect(plain.worker.count('request')).toBe(3);
    plain.worker.close();
  });

  it('ownership follows the admin API: once p2 lists a model, its workers may serve it', async () => {
    const wildcard = await ScriptedWorker.register(gw.workerUrl, { models: ['*'], max_concurrent: 4 }, P2);
    autoRespond(wildcard.worker);
    expect((await post(gw.url, '/v1/chat/completions', chat('local-13b'))).status).toBe(404);
    expect(wildcard.worker.count('request')).toBe(0);
    const patched = await admin(gw.url, 'PATCH', '/admin/providers/p2', TEST_ADMIN_TOKEN, { models: ['local-13b', 'p2-*'] });
    expect(patched.status).toBe(200);
    expect(patched.json.models).toEqual(['local-13b', 'p2-*']);
    expect(await sendMany(gw, 'local-13b', 2)).toEqual([200, 200]);
    expect(await sendMany(gw, 'p2-anything', 1)).toEqual([200]);
    expect(wildcard.worker.count('request')).toBe(3);
    // Restricted now, p2 no longer serves models nobody lists.
    expect((await post(gw.url, '/v1/chat/completions', chat('unlisted-model'))).status).toBe(404);
    expect((await admin(gw.url, 'PATCH', '/admin/providers/p2', TEST_ADMIN_TOKEN, { models: [] })).status).toBe(200);
    wildcard.worker.close();
  });
});
