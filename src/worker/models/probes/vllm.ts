import { JsonObject, asObject, contextLength, label } from './json';

/**
 * vLLM, read from GET /v1/models: each `data[]` entry (a ModelCard) carries `max_model_len`, the
 * context length the engine was started with (--max-model-len), and `owned_by: "vllm"`.
 * GET /version answers `{"version": "..."}`.
 */
export function looksLikeVllm(modelsDoc: JsonObject | undefined): boolean {
  return entries(modelsDoc).some((e) => e.owned_by === 'vllm' || typeof e.max_model_len === 'number');
}

/** model id → max_model_len, for the entries that carry a sane one. */
export function vllmContextLengths(modelsDoc: JsonObject | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of entries(modelsDoc)) {
    const ctx = contextLength(e.max_model_len);
    if (typeof e.id === 'string' && ctx !== undefined) out.set(e.id, ctx);
  }
  return out;
}

export function versionOf(doc: JsonObject | undefined): string | undefined {
  return doc ? label(doc.version) : undefined;
}

function entries(doc: JsonObject | undefined): JsonObject[] {
  const data = doc?.data;
  if (!Array.isArray(data)) return [];
  return data.map(asObject).filter((e): e is JsonObject => e !== undefined);
}
