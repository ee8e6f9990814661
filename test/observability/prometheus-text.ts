/**
 * A strict parser for the Prometheus text exposition format (0.0.4), used by the tests to prove
 * that /metrics output is what a Prometheus server accepts. Throws on the first malformed line.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface MetricFamily {
  name: string;
  type: MetricType;
  help?: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES: MetricType[] = ['counter', 'gauge', 'histogram', 'summary', 'untyped'];

export function parsePrometheusText(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  const finished = new Set<string>();
  let current: MetricFamily | undefined;

  const fail = (lineNo: number, why: string, line: string): never => {
    throw new Error(`line ${lineNo}: ${why}: ${JSON.stringify(line)}`);
  };
  const family = (name: string, lineNo: number, line: string): MetricFamily => {
    let f = families.get(name);
    if (!f) {
      f = { name, type: 'untyped', samples: [] };
      families.set(name, f);
    } else if (finished.has(name)) {
      fail(lineNo, `family ${name} is not contiguous`, line);
    }
    if (current && current !== f) finished.add(current.name);
    current = f;
    return f;
  };

  if (text.length > 0 && !text.endsWith('\n')) throw new Error('exposition must end with a newline');
  text.split('\n').forEach((line, i) => {
    const lineNo = i + 1;
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const m = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s+(.*))?$/.exec(line);
      if (!m) return; // plain comment
      const [, kind, name, rest = ''] = m;
      if (!METRIC_NAME.test(name)) fail(lineNo, 'bad metric name', line);
      const f = family(name, lineNo, line);
      if (kind === 'HELP') {
        if (f.help !== undefined) fail(lineNo, 'second HELP', line);
        f.help = rest;
      } else {
        if (!TYPES.includes(rest as MetricType)) fail(lineNo, 'unknown TYPE', line);
        if (f.samples.length > 0) fail(lineNo, 'TYPE after samples', line);
        f.type = rest as MetricType;
      }
      return;
    }
    const sample = parseSample(line, lineNo, fail);
    const owner = familyOf(sample.name, families, current);
    if (!owner) fail(lineNo, 'sample outside its family', line);
    family(owner!.name, lineNo, line).samples.push(sample);
  });

  for (const f of families.values()) checkFamily(f);
  return families;
}

function familyOf(sampleName: string, families: Map<string, MetricFamily>, current?: MetricFamily): MetricFamily | undefined {
  if (current && belongsTo(sampleName, current)) return current;
  const exact = families.get(sampleName);
  if (exact) return exact;
  for (const f of families.values()) if (belongsTo(sampleName, f)) return f;
  // An untyped sample with no HELP/TYPE is its own family.
  const f: MetricFamily = { name: sampleName, type: 'untyped', samples: [] };
  families.set(sampleName, f);
  return f;
}

function belongsTo(sampleName: string, f: MetricFamily): boolean {
  if (sampleName === f.name) return f.type !== 'histogram';
  const suffix = sampleName.slice(f.name.length);
  if (!sampleName.startsWith(f.name)) return false;
  if (f.type === 'histogram') return ['_bucket', '_sum', '_count'].includes(suffix);
  if (f.type === 'summary') return ['_sum', '_count'].includes(suffix);
  return false;
}

function parseSample(line: string, lineNo: number, fail: (n: number, why: string, line: string) => never): Sample {
  const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
  if (!nameMatch) fail(lineNo, 'bad sample name', line);
  const name = nameMatch![0];
  let pos = name.length;
  const labels: Record<string, string> = {};
  if (line[pos] === '{') {
    pos++;
    while (line[pos] !== '}') {
      const ln = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(line.slice(pos));
      if (!ln || !LABEL_NAME.test(ln[0])) fail(lineNo, 'bad label name', line);
      pos += ln![0].length;
      if (line.slice(pos, pos + 2) !== '="') fail(lineNo, 'expected ="', line);
      pos += 2;
      let value = '';
      for (;;) {
        const c = line[pos];
        if (c === undefined) fail(lineNo, 'unterminated label value', line);
        if (c === '"') break;
        if (c === '\\') {
          const e = line[pos + 1];
          if (e === '\\') value += '\\';
          else if (e === '"') value += '"';
          else if (e === 'n') value += '\n';
          else fail(lineNo, 'bad escape in label value', line);
          pos += 2;
        } else {
          value += c;
          pos++;
        }
      }
      pos++;
      if (ln![0] in labels) fail(lineNo, 'duplicate label', line);
      labels[ln![0]] = value;
      if (line[pos] === ',') pos++;
      else if (line[pos] !== '}') fail(lineNo, 'expected , or }', line);
    }
    pos++;
  }
  const tail = line.slice(pos);
  const m = /^ +(\S+)(?: +(-?\d+))?$/.exec(tail);
  if (!m) fail(lineNo, 'bad value', line);
  const value = parseValue(m![1]);
  if (value === undefined) fail(lineNo, 'bad value', line);
  return { name, labels, value: value! };
}

/** Mirrors Prometheus' Go parser (strconv.ParseFloat): special values are case-insensitive, so prom-client's `Nan` is valid. */
function parseValue(s: string): number | undefined {
  const special = /^([-+]?)(inf|infinity|nan)$/i.exec(s);
  if (special) return special[2].toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return undefined;
  return Number(s);
}

function checkFamily(f: MetricFamily): void {
  if (f.type === 'counter' && f.samples.some((s) => s.value < 0)) throw new Error(`${f.name}: negative counter`);
  if (f.type !== 'histogram') return;
  const series = new Map<string, Sample[]>();
  for (const s of f.samples) {
    if (!s.name.endsWith('_bucket')) continue;
    if (s.labels.le === undefined) throw new Error(`${f.name}: bucket without le`);
    const { le: _le, ...rest } = s.labels;
    const key = JSON.stringify(rest);
    series.set(key, [...(series.get(key) ?? []), s]);
  }
  for (const [key, buckets] of series) {
    const inf = buckets.find((b) => b.labels.le === '+Inf');
    if (!inf) throw new Error(`${f.name}${key}: no +Inf bucket`);
    for (let i = 1; i < buckets.length; i++) {
      if (buckets[i].value < buckets[i - 1].value) throw new Error(`${f.name}${key}: buckets not cumulative`);
    }
    const count = f.samples.find((s) => s.name === `${f.name}_count` && JSON.stringify(s.labels) === key);
    if (!count || count.value !== inf.value) throw new Error(`${f.name}${key}: _count does not match +Inf bucket`);
  }
}

/** The families every gateway exposes, with their types. */
export const SWITCHBOARD_FAMILIES: Record<string, MetricType> = {
  switchboard_requests_total: 'counter',
  switchboard_request_duration_seconds: 'histogram',
  switchboard_time_to_first_byte_seconds: 'histogram',
  switchboard_queue_depth: 'gauge',
  switchboard_queue_wait_seconds: 'histogram',
  switchboard_workers_connected: 'gauge',
  switchboard_worker_slots: 'gauge',
  switchboard_tokens_total: 'counter',
  switchboard_requeues_total: 'counter',
  switchboard_cancellations_total: 'counter',
  switchboard_rejections_total: 'counter',
  switchboard_worker_auth_failures_total: 'counter',
  switchboard_worker_ejections_total: 'counter',
  switchboard_rate_limited_total: 'counter',
  switchboard_cache_hits_total: 'counter',
  switchboard_cache_tokens_reused_total: 'counter',
  switchboard_cache_hit_ratio: 'gauge',
  switchboard_gpu_memory_used_bytes: 'gauge',
  switchboard_kv_cache_usage_ratio: 'gauge',
  switchboard_usage_records_written_total: 'counter',
  switchboard_usage_records_dropped_total: 'counter',
  switchboard_usage_records_buffered: 'gauge',
  switchboard_worker_heartbeat_timeouts_total: 'counter',
  switchboard_redis_up: 'gauge',
  switchboard_rate_limiter_fallbacks_total: 'counter',
};
