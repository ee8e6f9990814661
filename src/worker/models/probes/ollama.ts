import { ModelCapabilities } from '../../../protocol';
import { JsonObject, asObject, contextLength } from './json';

/**
 * Ollama, read from POST /api/show {"model": "<name>"}:
 * - `capabilities`: a list such as ["completion", "vision", "tools", "thinking", "embedding"];
 *   vision and tools are set from it (false when absent from the list);
 * - `model_info["<arch>.context_length"]`, <arch> being `model_info["general.architecture"]`:
 *   the context the model was trained for. Ollama runs it with its own num_ctx (often smaller,
 *   see OLLAMA_CONTEXT_LENGTH), so set --capability context_length=… when that matters.
 * Detected by GET /api/version, which answers `{"version": "..."}`.
 */
export function ollamaCapabilities(show: JsonObject): ModelCapabilities {
  const caps: ModelCapabilities = {};
  if (Array.isArray(show.capabilities)) {
    const list = show.capabilities.filter((c): c is string => typeof c === 'string');
    caps.vision = list.includes('vision');
    caps.tools = list.includes('tools');
  }
  const ctx = ollamaContextLength(asObject(show.model_info));
  if (ctx !== undefined) caps.context_length = ctx;
  return caps;
}

function ollamaContextLength(info: JsonObject | undefined): number | undefined {
  if (!info) return undefined;
  const arch = info['general.architecture'];
  if (typeof arch === 'string') {
    const ctx = contextLength(info[`${arch}.context_length`]);
    if (ctx !== undefined) return ctx;
  }
  // Some model files name the key after a variant of the architecture: accept a single match.
  const keys = Object.keys(info).filter((k) => k.endsWith('.context_length'));
  return keys.length === 1 ? contextLength(info[keys[0]]) : undefined;
}
