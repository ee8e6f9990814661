/**
 * What model lifecycle reads from a worker's relayed runner-API capabilities document
 * (`runner_capabilities` in `register`, as its backend wrote it at that time; see the runner spec's
 * `GET /v1/capabilities`): which models the backend knows, and its free GPU memory.
 */

type Doc = Record<string, unknown> | undefined;

function section(doc: Doc, key: string): Record<string, unknown> | undefined {
  const v = doc?.[key];
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** `models.loaded[]` entries with an id. */
function loadedEntries(doc: Doc): Array<Record<string, unknown> & { id: string }> {
  const loaded = section(doc, 'models')?.loaded;
  if (!Array.isArray(loaded)) return [];
  return loaded.filter((m): m is Record<string, unknown> & { id: string } => !!m && typeof m === 'object' && typeof (m as { id?: unknown }).id === 'string');
}

/**
 * Models the backend can load: `models.available` plus `models.loaded[].id`; undefined when the
 * document has no `models.available` list (then nothing can be said about a model).
 */
export function knownModels(doc: Doc): Set<string> | undefined {
  const available = section(doc, 'models')?.available;
  if (!Array.isArray(available)) return undefined;
  const names = available.map((m) => (typeof m === 'string' ? m : m && typeof m === 'object' ? (m as { id?: unknown }).id : undefined));
  return new Set([...names.filter((m): m is string => typeof m === 'string'), ...loadedEntries(doc).map((m) => m.id)]);
}

/** `resources.gpuMemoryFreeMB`, when the document gives it. */
export function gpuMemoryFreeMB(doc: Doc): number | undefined {
  const free = section(doc, 'resources')?.gpuMemoryFreeMB;
  return typeof free === 'number' && Number.isFinite(free) && free >= 0 ? free : undefined;
}

/** GPU memory a loaded model holds (`models.loaded[].gpuMemoryMB`), when the document gives it. */
export function loadedModelMemoryMB(doc: Doc, model: string): number | undefined {
  const mb = loadedEntries(doc).find((m) => m.id === model)?.gpuMemoryMB;
  return typeof mb === 'number' && Number.isFinite(mb) && mb >= 0 ? mb : undefined;
}
