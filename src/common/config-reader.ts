/** Reading typed values from environment variables (which win) and one mapping of the YAML file. */

export type Env = Record<string, string | undefined>;
export type Yaml = Record<string, unknown>;

/** Collects problems while reading values from env (wins) and the YAML file. */
export class Reader {
  readonly problems: string[] = [];
  /** YAML keys asked for, so unknown (misspelt) keys can be reported. */
  readonly knownYamlKeys: Set<string>;
  /**
   * @param file one mapping of the YAML file (the top level, or a section such as `routing`)
   * @param section the section's name, used to name keys in messages (`routing.strategy`)
   */
  constructor(
    private readonly env: Env,
    private readonly file: Yaml,
    private readonly section = '',
    knownKeys: string[] = [],
  ) {
    this.knownYamlKeys = new Set(knownKeys);
  }

  /** Keys of this mapping that no reader asked for (misspelt or unsupported settings). */
  unknownKeys(): string[] {
    return Object.keys(this.file).filter((k) => !this.knownYamlKeys.has(k));
  }

  /** A key's name as an operator finds it in the file. */
  where(yamlKey: string): string {
    return `${this.section ? `${this.section}.` : ''}${yamlKey} (config file)`;
  }

  private raw(envKey: string, yamlKey?: string): { value: unknown; source: string } | undefined {
    if (yamlKey) this.knownYamlKeys.add(yamlKey);
    const fromEnv = this.env[envKey];
    if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, source: envKey };
    if (yamlKey && this.file[yamlKey] !== undefined && this.file[yamlKey] !== null) {
      return { value: this.file[yamlKey], source: this.where(yamlKey) };
    }
    return undefined;
  }

  string(envKey: string, yamlKey: string | undefined, fallback: string): string;
  string(envKey: string, yamlKey?: string): string | undefined;
  string(envKey: string, yamlKey?: string, fallback?: string): string | undefined {
    const r = this.raw(envKey, yamlKey);
    if (!r) return fallback;
    if (typeof r.value !== 'string' && typeof r.value !== 'number') {
      this.problems.push(`${r.source} must be a string`);
      return fallback;
    }
    return String(r.value);
  }

  number(envKey: string, yamlKey: string | undefined, fallback: number, opts: NumberOpts = {}): number {
    const r = this.raw(envKey, yamlKey);
    if (!r) return fallback;
    return checkNumber(r.value, r.source, fallback, opts, this.problems);
  }

  /** Seconds (fractions allowed) → milliseconds. */
  seconds(envKey: string, yamlKey: string | undefined, fallbackSecs: number, opts: NumberOpts = {}): number {
    return toMillis(this.number(envKey, yamlKey, fallbackSecs, opts), envKey, opts, this.problems);
  }

  bool(envKey: string, yamlKey: string | undefined, fallback: boolean): boolean {
    const r = this.raw(envKey, yamlKey);
    if (!r) return fallback;
    if (typeof r.value === 'boolean') return r.value;
    const s = String(r.value).toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(s)) return true;
    if (['0', 'false', 'no', 'off'].includes(s)) return false;
    this.problems.push(`${r.source} must be true or false, got "${String(r.value)}"`);
    return fallback;
  }
}

export interface NumberOpts {
  min?: number;
  /** Strictly greater than this. */
  above?: number;
  max?: number;
  integer?: boolean;
}

/** Node timers overflow (and fire at once) past 2^31-1 ms, about 24.8 days. */
export const MAX_TIMER_SECS = 2147483;
/** A duration that drives a timer: positive, at least 1 ms, within Node's timer range. */
export const TIMER: NumberOpts = { above: 0, max: MAX_TIMER_SECS };
/** A timer duration where 0 switches the feature off (or means "at once"). */
export const TIMER_OR_ZERO: NumberOpts = { min: 0, max: MAX_TIMER_SECS };

export function checkNumber(value: unknown, source: string, fallback: number, opts: NumberOpts, problems: string[]): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  const bad =
    !Number.isFinite(n) ||
    (opts.integer && !Number.isInteger(n)) ||
    (opts.min !== undefined && n < opts.min) ||
    (opts.above !== undefined && n <= opts.above) ||
    (opts.max !== undefined && n > opts.max);
  if (bad) {
    const rule = [
      opts.integer ? 'an integer' : 'a number',
      opts.min !== undefined ? `>= ${opts.min}` : '',
      opts.above !== undefined ? `> ${opts.above}` : '',
      opts.max !== undefined ? `<= ${opts.max}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    problems.push(`${source} must be ${rule}, got "${String(value)}"`);
    return fallback;
  }
  return n;
}

/** Seconds → whole milliseconds; a positive duration may not round down to 0 ms. */
export function toMillis(secs: number, source: string, opts: NumberOpts, problems: string[]): number {
  const ms = Math.round(secs * 1000);
  if (opts.above === 0 && ms < 1) {
    problems.push(`${source} must be at least 0.001 (one millisecond), got "${secs}"`);
    return 1;
  }
  return ms;
}
