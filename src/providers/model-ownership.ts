/**
 * Which providers' workers may serve a model (docs/routing.md, "Model ownership").
 *
 * A provider's `models` holds exact names and `*` globs. Together they are the provider's
 * allow-list; a provider without `models` allows any model. A model that some provider lists
 * (exactly or by a glob) belongs to the providers that list it: a worker of any other provider
 * never receives it, whatever it advertises — otherwise a worker of one pool could claim another
 * pool's model and receive its prompts and its clients' authorization headers.
 */

/** A provider's `models` compiled for matching. */
export interface AllowList {
  /** False for a provider without `models`: it allows any model nobody else owns. */
  readonly restricted: boolean;
  /** The exact names: declared models (requests for them may wait while no worker has them). */
  readonly exact: ReadonlySet<string>;
  /** The `*` globs, as written (for messages and listings). */
  readonly globs: readonly string[];
  matches(model: string): boolean;
}

/** Whether a `models` entry is a glob: it contains `*` (the only wildcard; everything else is literal). */
export function isGlob(entry: string): boolean {
  return entry.includes('*');
}

/** `llama-*` → /^llama-.*$/ with every other character literal. */
function globToRegExp(glob: string): RegExp {
  const body = glob
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, 's');
}

export function compileAllowList(models: readonly string[]): AllowList {
  const exact = new Set<string>();
  const globs: string[] = [];
  for (const m of models) {
    if (isGlob(m)) globs.push(m);
    else exact.add(m);
  }
  const patterns = globs.map(globToRegExp);
  const any = globs.includes('*');
  return {
    restricted: models.length > 0,
    exact,
    globs,
    matches: (model) => any || exact.has(model) || patterns.some((p) => p.test(model)),
  };
}

/** What ownership needs to know about a provider. */
export interface OwningProvider {
  readonly name: string;
  readonly allowList: AllowList;
}

/** Distinct model names remembered before the cache starts over (client-chosen names are unbounded). */
const CACHE_LIMIT = 4096;
const NO_OWNERS: ReadonlySet<OwningProvider> = new Set();

/**
 * Owners per model, computed on first use and cached until the providers change (rare), so the
 * request path does one map lookup per candidate model instead of matching every provider's globs.
 */
export class ModelOwnership<P extends OwningProvider> {
  private cache = new Map<string, ReadonlySet<P>>();

  constructor(private readonly providers: () => Iterable<P>) {}

  /** Providers whose `models` list the model (exactly or by a glob); empty = nobody owns it. */
  ownersOf(model: string): ReadonlySet<P> {
    let owners = this.cache.get(model);
    if (owners === undefined) {
      let found: Set<P> | undefined;
      for (const p of this.providers()) {
        if (p.allowList.restricted && p.allowList.matches(model)) (found ??= new Set()).add(p);
      }
      owners = found ?? (NO_OWNERS as ReadonlySet<P>);
      if (this.cache.size >= CACHE_LIMIT) this.cache = new Map();
      this.cache.set(model, owners);
    }
    return owners;
  }

  /** Whether a worker of `provider` may serve `model`. */
  mayServe(provider: P, model: string): boolean {
    return ownerAllows(this.ownersOf(model), provider);
  }

  /** Providers were added, removed or changed their `models`. */
  invalidate(): void {
    this.cache = new Map();
  }
}

/** The ownership rule given a model's owners: an owner, or (when nobody owns it) an unrestricted provider. */
export function ownerAllows<P extends OwningProvider>(owners: ReadonlySet<P>, provider: P): boolean {
  return owners.size === 0 ? !provider.allowList.restricted : owners.has(provider);
}
