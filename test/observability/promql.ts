/**
 * The metric names a PromQL expression selects: every identifier that is not a function, an
 * aggregation, a keyword, a label name in by/without/on/ignoring/group_left/group_right, or
 * something inside a string, a label matcher `{...}` or a range `[...]`. Grafana variables
 * (`$provider`, `$__rate_interval`) are skipped. Enough for dashboards and alert rules; not a
 * full parser.
 */

const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'atan2',
  'inf',
  'nan',
  'start',
  'end',
]);
/** Keywords followed by a parenthesised list of label names. */
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

export function metricNamesIn(expr: string): string[] {
  const names = new Set<string>();
  let i = 0;
  const n = expr.length;
  let skipLabelList = false;
  while (i < n) {
    const c = expr[i];
    if (c === '"' || c === "'" || c === '`') {
      i = skipQuoted(expr, i, c);
      continue;
    }
    if (c === '{') {
      i = skipUntil(expr, i, '}');
      continue;
    }
    if (c === '[') {
      i = skipUntil(expr, i, ']');
      continue;
    }
    if (c === '#') {
      while (i < n && expr[i] !== '\n') i++;
      continue;
    }
    if (c === '$') {
      i++;
      while (i < n && /[A-Za-z0-9_]/.test(expr[i])) i++;
      continue;
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(expr[i + 1] ?? ''))) {
      // Numbers and durations (5m, 1e3, 0.95).
      while (i < n && /[0-9A-Za-z._]/.test(expr[i])) i++;
      continue;
    }
    if (/[A-Za-z_:]/.test(c)) {
      const start = i;
      while (i < n && /[A-Za-z0-9_:]/.test(expr[i])) i++;
      const word = expr.slice(start, i);
      let j = i;
      while (j < n && /\s/.test(expr[j])) j++;
      const next = expr[j];
      const lower = word.toLowerCase();
      skipLabelList = false;
      if (LABEL_LIST_KEYWORDS.has(lower)) {
        skipLabelList = true;
        continue;
      }
      if (KEYWORDS.has(lower) || AGGREGATIONS.has(lower)) continue;
      if (next === '(') continue; // a function call
      names.add(word);
      continue;
    }
    if (c === '(' && skipLabelList) {
      skipLabelList = false;
      i = skipUntil(expr, i, ')');
      continue;
    }
    if (!/\s/.test(c)) skipLabelList = false;
    i++;
  }
  return [...names];
}

function skipQuoted(expr: string, i: number, quote: string): number {
  let j = i + 1;
  while (j < expr.length && expr[j] !== quote) j += expr[j] === '\\' && quote !== '`' ? 2 : 1;
  if (j >= expr.length) throw new Error(`unterminated string in: ${expr}`);
  return j + 1;
}

/** Skips to after `close`, minding strings inside (label matchers hold quoted values). */
function skipUntil(expr: string, i: number, close: string): number {
  let j = i + 1;
  while (j < expr.length && expr[j] !== close) {
    const c = expr[j];
    j = c === '"' || c === "'" || c === '`' ? skipQuoted(expr, j, c) : j + 1;
  }
  if (j >= expr.length) throw new Error(`unbalanced ${close} in: ${expr}`);
  return j + 1;
}

/** The family a sample name belongs to: histogram and summary series carry suffixes. */
export function familyOfSeries(name: string, families: ReadonlySet<string>): string | undefined {
  if (families.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (name.endsWith(suffix) && families.has(name.slice(0, -suffix.length))) return name.slice(0, -suffix.length);
  }
  return undefined;
}
