import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { declaredTables, renderConfigTable, renderConfigTables } from './docs-table';
import { group, num, str } from './setting';

const DOC = join(__dirname, '..', '..', 'docs', 'configuration.md');

describe('docs/configuration.md key tables', () => {
  it('match the declarations (run `npm run docs:config` after changing a key)', () => {
    const text = readFileSync(DOC, 'utf8');
    const rendered = renderConfigTables(text);
    expect(rendered.tables.sort()).toEqual(declaredTables().sort());
    expect(rendered.text).toBe(text);
  });

  it('render a row per key: variable and aliases, YAML path, default, reload class, description', () => {
    const g = group('queue', 'queue', {
      a: num({ env: 'A_SECS', aliases: ['OLD_A'], yaml: 'a_secs', default: 10, opts: {}, reload: 'restart', fields: ['a'], doc: 'x | y' }),
      b: str({ yaml: 'b', reload: 'live', fields: ['b'], doc: 'file only', table: 'other' }),
    });
    expect(renderConfigTable('main', [g])).toBe(
      '| variable | YAML key | default | reload | meaning |\n|---|---|---|---|---|\n| `A_SECS` (alias `OLD_A`) | `queue.a_secs` | `10` | restart | x \\| y |\n',
    );
    expect(renderConfigTable('other', [g])).toContain('| — | `queue.b` | none | live | file only |');
  });
});
