import { ModelCapabilities } from '../../../protocol';
import { JsonObject, asObject, bool, contextLength, label } from './json';

/**
 * llama.cpp's llama-server, read from GET /props:
 * - `default_generation_settings.n_ctx`: the context of one slot. llama-server splits --ctx-size
 *   between its --parallel slots (unless --kv-unified), and one request runs in one slot, so
 *   this per-slot value, not the total, is the longest prompt + answer a request can have;
 * - `modalities.vision`: a multimodal projector is loaded;
 * - `chat_template_caps.supports_tools` / `supports_tool_calls`: the chat template renders tool
 *   definitions and tool calls (reported by builds with Jinja templates; absent otherwise);
 * - `build_info`: "b<build>-<commit>", used as the runner version.
 */
export function isLlamaServerProps(doc: JsonObject): boolean {
  return asObject(doc.default_generation_settings) !== undefined || typeof doc.build_info === 'string' || typeof doc.total_slots === 'number';
}

export function llamaServerCapabilities(props: JsonObject): ModelCapabilities {
  const caps: ModelCapabilities = {};
  const ctx = contextLength(asObject(props.default_generation_settings)?.n_ctx);
  if (ctx !== undefined) caps.context_length = ctx;
  const vision = bool(asObject(props.modalities)?.vision);
  if (vision !== undefined) caps.vision = vision;
  const template = asObject(props.chat_template_caps);
  if (template) {
    const flags = [bool(template.supports_tools), bool(template.supports_tool_calls)];
    if (flags.includes(false)) caps.tools = false;
    else if (flags.includes(true)) caps.tools = true;
  }
  return caps;
}

export function llamaServerVersion(props: JsonObject): string | undefined {
  return label(props.build_info);
}
