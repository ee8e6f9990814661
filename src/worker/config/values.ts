import { CAPABILITY_FIELDS, CAPABILITY_TYPES, CapabilityBounds, ModelCapabilities, readCapability } from '../../protocol';
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

/**
 * The daemon's own configuration is taken exactly: a context length that is not a whole number >= 1
 * is refused and reported, not rounded like a worker frame's hint (the operator wrote it; say so).
 */
const CONFIGURED: CapabilityBounds = { contextLength: Infinity, numbers: 'exact' };

/** The problem with a refused value, by the field's type. */
function refusal(field: keyof ModelCapabilities): string {
  return CAPABILITY_TYPES[field].type === 'boolean' ? 'must be true or false' : 'must be a positive integer';
}

const KNOWN = CAPABILITY_FIELDS.map((f) => (CAPABILITY_TYPES[f].type === 'boolean' ? f : `${f}=N`)).join(', ');

function capabilityField(name: string): keyof ModelCapabilities | undefined {
  return CAPABILITY_FIELDS.find((f) => f === name);
}

/**
 * The JSON value a `name=value` item stands for, which the shared reader then checks: a bare flag is
 * true, `true`/`false` are themselves, digits are a number; anything else stays text (and is refused).
 */
function fromText(field: keyof ModelCapabilities, value: string | undefined): unknown {
  if (CAPABILITY_TYPES[field].type === 'boolean') return value === undefined || value === 'true' ? true : value === 'false' ? false : value;
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : value;
}

/** Parses "vision,tools,json_mode,context_length=8192" (booleans may be written vision=false). */
function parseCapabilityList(text: string, where: string, problems: string[]): ModelCapabilities | undefined {
  const caps: Record<string, unknown> = {};
  let ok = true;
  for (const item of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, value] = item.split('=', 2).map((s) => s.trim());
    const field = capabilityField(name);
    if (field === undefined) {
      problems.push(`${where}: unknown capability "${name}" (known: ${KNOWN})`);
      ok = false;
      continue;
    }
    const v = readCapability(field, fromText(field, value), CONFIGURED);
    if (v !== undefined) caps[field] = v;
    else {
      const boolean = CAPABILITY_TYPES[field].type === 'boolean';
      problems.push(boolean ? `${where}: ${field} must be true or false, got "${value}"` : `${where}: ${field} needs a positive integer, e.g. ${field}=8192`);
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
      const caps: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        const field = capabilityField(k);
        const read = field && readCapability(field, v, CONFIGURED);
        if (field === undefined) problems.push(`${where}: unknown capability "${k}"`);
        else if (read === undefined) problems.push(`${where}.${field} ${refusal(field)}, got "${String(v)}"`);
        else caps[field] = read;
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
