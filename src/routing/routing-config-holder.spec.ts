import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../config';
import { ConfigReloadService } from '../config/config-reload.service';
import { Setting } from '../config/setting';
import { SETTING_GROUPS } from '../config/settings';
import { RoutingConfigHolder } from './routing-config-holder';

/** A gateway's reload path without the gateway: CONFIG_FILE, the reload service and the holder. */
function boot(routingYaml: string) {
  const file = join(mkdtempSync(join(tmpdir(), 'sb-routing-')), 'config.yaml');
  const write = (routing: string) => writeFileSync(file, `routing:\n${routing}`);
  write(routingYaml);
  const config = loadConfig({ CONFIG_FILE: file });
  const reload = new ConfigReloadService(config);
  const holder = new RoutingConfigHolder(config, reload);
  return { holder, reloadWith: (routing: string) => (write(routing), reload.reload('test')) };
}

/** One change of each live key under `routing:`, as an operator writes it. */
const SAMPLES: Record<string, string> = {
  // `smart` turns affinity on unless it is set: kept on, so that only the strategy changes.
  strategy: '  strategy: round_robin\n  affinity: {enabled: true}\n',
  weights: '  weights: {priority: 40, load: 40, latency: 20}\n',
  aliases: '  aliases: {gpt-4: m1}\n',
  fallbacks: '  fallbacks: {m1: [m2]}\n',
  translation: '  translation: never\n',
  allow_pinning: '  allow_pinning: false\n',
  eject_after_failures: '  eject_after_failures: 5\n',
  eject_cooldown_secs: '  eject_cooldown_secs: 10\n',
  eject_max_cooldown_secs: '  eject_max_cooldown_secs: 600\n',
  'affinity.enabled': '  affinity: {enabled: false}\n',
  'affinity.sources': '  affinity: {sources: [header]}\n',
  'affinity.prefix_chars': '  affinity: {prefix_chars: 1024}\n',
  'affinity.min_prefix_chars': '  affinity: {min_prefix_chars: 100}\n',
  'affinity.load_factor': '  affinity: {load_factor: 2}\n',
  expose_worker_header: '  expose_worker_header: true\n',
};

const liveRoutingKeys = SETTING_GROUPS.filter((g) => g.root === 'routing')
  .flatMap((g) => Object.values<Setting>(g.settings))
  .filter((s) => s.reload === 'live')
  .map((s) => s.yaml!);

describe('RoutingConfigHolder: a reload of the routing: section', () => {
  it('applies and reports a change of routing.translation alone', async () => {
    const { holder, reloadWith } = boot('  translation: auto\n');
    const result = await reloadWith('  translation: never\n');
    expect(result.changes.routing).toEqual({ translation: { from: 'auto', to: 'never' } });
    expect(result.restart_required).toEqual([]);
    expect(holder.current.translation).toBe('never');
  });

  it('applies and reports, by its name, a change of each live routing key alone', async () => {
    // A key declared after this list was written needs a sample here.
    expect(Object.keys(SAMPLES).sort()).toEqual([...liveRoutingKeys].sort());
    for (const key of liveRoutingKeys) {
      const { holder, reloadWith } = boot('  strategy: smart\n');
      const before = holder.current;
      const result = await reloadWith(SAMPLES[key]);
      expect({ key, changed: Object.keys(result.changes.routing) }).toEqual({ key, changed: [key] });
      expect({ key, restart_required: result.restart_required }).toEqual({ key, restart_required: [] });
      expect(holder.current).not.toBe(before);
    }
  });

  it('reports seconds as seconds and maps as added, updated and removed names', async () => {
    const { reloadWith } = boot('  eject_cooldown_secs: 30\n  aliases: {a: m1, b: m1}\n');
    const result = await reloadWith('  eject_cooldown_secs: 10\n  aliases: {a: m2, c: m1}\n');
    expect(result.changes.routing).toEqual({
      eject_cooldown_secs: { from: 30, to: 10 },
      aliases: { added: ['c'], updated: ['a'], removed: ['b'] },
    });
  });

  it('keeps the running value of a restart key changed with a live one, and lists it in restart_required', async () => {
    const { holder, reloadWith } = boot('  first_byte_timeout_secs: 120\n');
    const result = await reloadWith('  first_byte_timeout_secs: 5\n  translation: never\n');
    expect(result.changes.routing).toEqual({ translation: { from: 'auto', to: 'never' } });
    expect(result.restart_required).toEqual(['routing.first_byte_timeout_secs']);
    expect(holder.current).toMatchObject({ translation: 'never', firstByteTimeoutMs: 120_000 });
  });
});
