import { startGateway, TestGateway } from '../support/gateway';
import { eventually } from '../support/http';
import { ConfigFile, loadConfigProblems, providers, tenants } from './support';

/**
 * The SIGHUP handler of an in-process app. Jest gives each test file its own `process` object, so
 * a real signal (`process.kill(process.pid, 'SIGHUP')`) would not reach the handler and would end
 * the test worker: the handler is invoked here by emitting the event on that object, and the real
 * signal is sent to a gateway child process in sighup-process.e2e-spec.ts.
 */
describe('SIGHUP reloads the configuration like POST /admin/reload (in process)', () => {
  let gw: TestGateway;
  let file: ConfigFile;
  let listenersBefore: number;
  let lines: Array<Record<string, any>>;
  const sighup = () => {
    expect(process.listenerCount('SIGHUP')).toBe(listenersBefore + 1);
    process.emit('SIGHUP', 'SIGHUP');
  };

  beforeEach(async () => {
    listenersBefore = process.listenerCount('SIGHUP');
    file = new ConfigFile('providers:\n  - name: local\n    secret: test-worker-secret\ntenants:\n  team-a: {rpm: 10}\n');
    lines = [];
    const destination = { write: (chunk: string) => void lines.push(JSON.parse(chunk)) };
    gw = await startGateway({ CONFIG_FILE: file.path, LOG_LEVEL: 'info' }, { logDestination: destination });
  });
  afterEach(() => gw.close());

  it('installs one handler per app and removes it when the app closes', async () => {
    expect(process.listenerCount('SIGHUP')).toBe(listenersBefore + 1);
    const second = await startGateway({ CONFIG_FILE: file.path });
    expect(process.listenerCount('SIGHUP')).toBe(listenersBefore + 2);
    await second.close();
    expect(process.listenerCount('SIGHUP')).toBe(listenersBefore + 1);
  });

  it('applies a valid file and logs what changed', async () => {
    file.write('providers:\n  - name: local\n    secret: test-worker-secret\n  - name: hup\n    secret: hup-secret-1\ntenants:\n  team-a: {rpm: 20}\n');
    sighup();
    await eventually(async () => 'hup' in (await providers(gw)));
    expect(await tenants(gw)).toMatchObject({ data: [{ id: 'team-a', source: 'config', settings: { rpm: 20 } }] });
    const line = (await eventually(() => lines.find((l) => l.msg === 'configuration reloaded (SIGHUP)')))!;
    expect(line).toMatchObject({ level: 'info', context: 'ConfigReload', restart_required: [] });
    expect(line.changes).toMatchObject({ providers: { added: ['hup'], updated: [], removed: [] }, tenants: { updated: ['team-a'] } });
  });

  it('refuses an invalid file, logs every problem, and keeps the running configuration', async () => {
    const before = await providers(gw);
    const tenantsBefore = await tenants(gw);
    file.write(
      'providers:\n  - name: local\n    secret: test-worker-secret\n  - name: hup\n    max_queue_len: many\ntenants:\n  team-a: {rpm: -1}\nrouting: {strategy: [1]}\n',
    );
    sighup();
    const line = (await eventually(() => lines.find((l) => String(l.msg).startsWith('configuration reload refused'))))!;
    expect(line).toMatchObject({ level: 'error', context: 'ConfigReload' });
    const expected = loadConfigProblems(file.path);
    expect(expected.length).toBeGreaterThanOrEqual(3);
    expect(line.problems).toEqual(expected);
    expect(line.msg).toContain(`(${expected.length} problems): ${expected.join('; ')} (SIGHUP); the running configuration stays`);
    expect(await providers(gw)).toEqual(before);
    expect(await tenants(gw)).toEqual(tenantsBefore);
  });
});
