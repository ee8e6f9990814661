import { ModelCapabilities } from '../../protocol';
import { Raw } from './sources';

// ---------------------------------------------------------------------------------------------
// Value checks. Each returns undefined after recording a problem.

export function asString(raw: Raw, problems: string[]): string | undefined {
  if (typeof raw.value === 'string') return raw.value.trim();
  if (typeof raw.value === 'number') return String(raw.value);
  problems.push(`${raw.source} must be a string`);
  return undefined;
}

/** Node timers overflow (and fire at once, or throw) past 2^31-1 ms, about 24.8 days. */
const MAX_TIMER_SECS = 2147483;

export function asSeconds(raw: Raw, problems: string[], opts: { allowZero: boolean }): number | undefined {
  const v = raw.value;
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (!Number.isFinite(n) || n < 0 || (!opts.allowZero && n === 0)) {
    problems.push(`${raw.source} must be a number of seconds ${opts.allowZero ? '>= 0' : '> 0'}, got "${String(v)}"`);
    return undefined;
  }
  if (n > MAX_TIMER_SECS) {
    problems.push(`${raw.source} must be at most ${MAX_TIMER_SECS} seconds (about 24.8 days, the longest timer Node keeps), got "${String(v)}"`);
    return undefined;
  }
  return Math.round(n * 1000);
}

export function asPositiveInt(raw: Raw, problems: string[]): number | undefined {
  const v = raw.value;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 1) {
    problems.push(`${raw.source} must be an integer >= 1, got "${String(v)}"`);
    return undefined;
  }
  return n;
}

export function asNonNegativeInt(raw: Raw, problems: string[]): number | undefined {
  const v = raw.value;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) {
    problems.push(`${raw.source} must be an integer >= 0, got "${String(v)}"`);
    return undefined;
  }
  return n;
}

export function asBool(raw: Raw, problems: string[]): boolean | undefined {
  if (typeof raw.value === 'boolean') return raw.value;
  const s = String(raw.value).trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(s)) return true;
  if (['0', 'false', 'no', 'off'].includes(s)) return false;
  problems.push(`${raw.source} must be true or false, got "${String(raw.value)}"`);
  return undefined;
}

export function asUrl(raw: Raw, problems: string[], schemes: string[]): URL | undefined {
  const s = asString(raw, problems);
  if (s === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    problems.push(`${raw.source} must be a URL, got "${s}"`);
    return undefined;
  }
  if (!schemes.includes(url.protocol)) {
    problems.push(`${raw.source} must use ${schemes.map((p) => p.replace(':', '')).join('/')}, got "${s}"`);
    return undefined;
  }
  if (url.search || url.hash) {
    problems.push(`${raw.source} must not have a query string or fragment, got "${s}"`);
    return undefined;
  }
  return url;
}

/**
 * One gateway URL or several (`a,b,c`, or a YAML list): the daemon tries them in turn. Duplicates
 * are dropped; every entry is checked like a single URL.
 */
export function asUrlList(raw: Raw, problems: string[], schemes: string[]): URL[] | undefined {
  const items = Array.isArray(raw.value) ? raw.value : typeof raw.value === 'string' ? raw.value.split(',') : undefined;
  if (items === undefined || !items.every((x) => typeof x === 'string')) {
    problems.push(`${raw.source} must be a URL, a comma-separated list of URLs or a list of URLs`);
    return undefined;
  }
  const entries = (items as string[]).map((x) => x.trim()).filter(Boolean);
  if (entries.length === 0) {
    problems.push(`${raw.source} must name at least one URL`);
    return undefined;
  }
  const urls: URL[] = [];
  for (const entry of entries) {
    const url = asUrl({ ...raw, value: entry }, problems, schemes);
    if (url === undefined) return undefined;
    if (!urls.some((u) => u.href === url.href)) urls.push(url);
  }
  return urls;
}

/**
 * Characters Node's http refuses in a header value (it throws, "Invalid character in header
 * content"): anything but HTAB, SP, visible ASCII and obs-text (0x80-0xFF). So control characters
 * and non-Latin-1 letters such as Cyrillic cannot be part of a secret sent in a header.
 */
const INVALID_HEADER_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

/** Records a problem when `value` cannot be sent in an HTTP header. Never echoes the value: it is a secret. */
export function checkHeaderSafe(raw: Raw, value: string, sentIn: string, problems: string[]): boolean {
  if (!INVALID_HEADER_VALUE_CHAR.test(value)) return true;
  problems.push(
    `${raw.source} contains characters that cannot be sent in an HTTP header (it goes in ${sentIn}): ` +
      'no control characters and no letters outside Latin-1 (e.g. Cyrillic); use printable ASCII',
  );
  return false;
}

export function stripTrailingSlashes(s: string): string {
  return s.replace(/\/+$/, '');
}

/** http(s) → ws(s); trailing slashes dropped. */
export function toWebSocketBase(url: URL): string {
  const scheme = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss:' : 'ws:';
  return stripTrailingSlashes(`${scheme}//${url.host}${url.pathname}`);
}

export function asModelList(raw: Raw, problems: string[]): { discover: boolean; models: string[] } | undefined {
  let items: string[];
  if (Array.isArray(raw.value) && raw.value.every((x) => typeof x === 'string')) items = raw.value as string[];
  else if (typeof raw.value === 'string') items = raw.value.split(',');
  else {
    problems.push(`${raw.source} must be a comma-separated list or a list of strings`);
    return undefined;
  }
  const models: string[] = [];
  for (const m of items.map((s) => s.trim()).filter(Boolean)) if (!models.includes(m)) models.push(m);
  if (models.length === 0) {
    problems.push(`${raw.source} must name at least one model, or * to ask the backend`);
    return undefined;
  }
  if (models.includes('*')) {
    if (models.length > 1) {
      problems.push(`${raw.source}: * (ask the backend) cannot be combined with explicit names`);
      return undefined;
    }
    return { discover: true, models: [] };
  }
  return { discover: false, models };
}

/** Parses "vision,tools,json_mode,context_length=8192" (booleans may be written vision=false). */
function parseCapabilityList(text: string, where: string, problems: string[]): ModelCapabilities | undefined {
  const caps: ModelCapabilities = {};
  let ok = true;
  for (const item of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, value] = item.split('=', 2).map((s) => s.trim());
    if (name === 'context_length') {
      const n = value !== undefined && /^\d+$/.test(value) ? Number(value) : NaN;
      if (!Number.isInteger(n) || n < 1) {
        problems.push(`${where}: context_length needs a positive integer, e.g. context_length=8192`);
        ok = false;
      } else caps.context_length = n;
    } else if (name === 'vision' || name === 'tools' || name === 'json_mode') {
      if (value === undefined || value === 'true') caps[name] = true;
      else if (value === 'false') caps[name] = false;
      else {
        problems.push(`${where}: ${name} must be true or false, got "${value}"`);
        ok = false;
      }
    } else {
      problems.push(`${where}: unknown capability "${name}" (known: vision, tools, json_mode, context_length=N)`);
      ok = false;
    }
  }
  return ok ? caps : undefined;
}

export function asCapabilities(raw: Raw, problems: string[]): Record<string, ModelCapabilities> | undefined {
  const out: Record<string, ModelCapabilities> = {};
  const before = problems.length;
  if (Array.isArray(raw.value)) {
    for (const entry of raw.value) {
      const where = `${raw.source} "${String(entry)}"`;
      if (typeof entry !== 'string') {
        problems.push(`${where} must be MODEL:CAPS`);
        continue;
      }
      const colon = entry.lastIndexOf(':');
      const model = colon === -1 ? '' : entry.slice(0, colon).trim();
      if (!model) {
        problems.push(`${where} must be MODEL:CAPS, e.g. llama3:vision,tools,context_length=8192`);
        continue;
      }
      const caps = parseCapabilityList(entry.slice(colon + 1), where, problems);
      if (caps) out[model] = caps;
    }
  } else if (raw.value && typeof raw.value === 'object') {
    for (const [model, value] of Object.entries(raw.value as Record<string, unknown>)) {
      const where = `${raw.source} "${model}"`;
      if (typeof value === 'string') {
        const caps = parseCapabilityList(value, where, problems);
        if (caps) out[model] = caps;
        continue;
      }
      if (!value || typeof value !== 'object' || Array.isArray(value)) {
        problems.push(`${where} must be a mapping like {vision: true, context_length: 8192}`);
        continue;
      }
      const caps: ModelCapabilities = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (k === 'context_length') {
          if (typeof v === 'number' && Number.isInteger(v) && v > 0) caps.context_length = v;
          else problems.push(`${where}.context_length must be a positive integer, got "${String(v)}"`);
        } else if (k === 'vision' || k === 'tools' || k === 'json_mode') {
          if (typeof v === 'boolean') caps[k] = v;
          else problems.push(`${where}.${k} must be true or false, got "${String(v)}"`);
        } else problems.push(`${where}: unknown capability "${k}"`);
      }
      out[model] = caps;
    }
  } else {
    problems.push(`${raw.source} must be a mapping of model -> capabilities`);
  }
  return problems.length === before ? out : undefined;
}

export function normalizeBackendUrl(url: URL): string {
  const base = stripTrailingSlashes(`${url.protocol}//${url.host}${url.pathname}`);
  return base.endsWith('/v1') ? base.slice(0, -3) : base;
}
