/**
 * docs/configuration.md's key tables, rendered from the declarations. The file marks each table
 * with `<!-- config-table:start NAME -->` … `<!-- config-table:end -->`; `npm run docs:config`
 * rewrites what lies between, and docs-table.spec.ts fails while the file and the declarations differ.
 */
import type { Setting, SettingGroup } from './setting';
import { yamlPath } from './setting';
import { SETTING_GROUPS } from './settings';

const MARKED = /(<!-- config-table:start ([\w-]+) -->\n)[\s\S]*?(<!-- config-table:end -->)/g;

function code(text: string): string {
  return `\`${text}\``;
}

function defaultText(s: Setting): string {
  if (s.docDefault !== undefined) return s.docDefault;
  if (s.default === undefined || s.default === '') return 'none';
  return code(String(s.default));
}

function variableText(s: Setting): string {
  if (s.env === undefined) return '—';
  const aliases = (s.aliases ?? []).map(code).join(', ');
  return `${code(s.env)}${aliases ? ` (alias ${aliases})` : ''}`;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

/** The rows of one table (`main` unless a key names another), in declaration order. */
export function renderConfigTable(table: string, groups: SettingGroup[] = SETTING_GROUPS): string {
  const rows = ['| variable | YAML key | default | reload | meaning |', '|---|---|---|---|---|'];
  for (const g of groups) {
    for (const s of Object.values<Setting>(g.settings)) {
      if ((s.table ?? 'main') !== table) continue;
      const path = yamlPath(g, s);
      rows.push(`| ${[variableText(s), path ? code(path) : '—', defaultText(s), s.reload, s.doc].map(cell).join(' | ')} |`);
    }
  }
  return rows.join('\n') + '\n';
}

/** The markdown with every marked table rendered anew; the names of the tables found. */
export function renderConfigTables(markdown: string, groups: SettingGroup[] = SETTING_GROUPS): { text: string; tables: string[] } {
  const tables: string[] = [];
  const text = markdown.replace(MARKED, (_all, start: string, name: string, end: string) => {
    tables.push(name);
    return `${start}${renderConfigTable(name, groups)}${end}`;
  });
  return { text, tables };
}

/** Table names the declarations use, so a key in a table the docs lack is caught. */
export function declaredTables(groups: SettingGroup[] = SETTING_GROUPS): string[] {
  const names = groups.flatMap((g) => Object.values<Setting>(g.settings).map((s) => s.table ?? 'main'));
  return [...new Set(names)];
}
