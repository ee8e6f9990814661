export interface SanitizedModels {
  models: string[];
  warnings: string[];
}

/**
 * Trims names, drops empties and exact duplicates (first seen wins), caps the list at `limit`.
 * Every drop is reported, because the worker believes it serves what it sent.
 */
export function sanitizeModels(raw: string[], limit: number): SanitizedModels {
  const warnings: string[] = [];
  const seen = new Set<string>();
  let empty = 0;
  let duplicate = 0;
  for (const name of raw) {
    const m = name.trim();
    if (m === '') empty++;
    else if (seen.has(m)) duplicate++;
    else seen.add(m);
  }
  let models = [...seen];
  if (empty) warnings.push(`dropped ${empty} empty model name${empty === 1 ? '' : 's'}`);
  if (duplicate) warnings.push(`dropped ${duplicate} duplicate model name${duplicate === 1 ? '' : 's'}`);
  if (models.length > limit) {
    warnings.push(`model list truncated from ${models.length} to ${limit} entries (provider limit)`);
    models = models.slice(0, limit);
  }
  if (models.length === 0) warnings.push('worker registered without any routable models');
  return { models, warnings };
}
