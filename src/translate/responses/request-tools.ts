import { Errors, GatewayError } from '../../common/gateway-error';
import type { Json } from '../dialect-codec';
import { isRecord, str } from './shapes';

/** The client's tools as chat function tools, and which function names came from a `namespace` tool. */
export interface FlatTools {
  tools: Json[];
  namespaces: Map<string, string>;
}

/**
 * Chat knows only function tools: a `namespace` (a named group of functions, as Codex sends for MCP
 * servers) is flattened into its functions; hosted tools (`web_search`, `file_search`, `local_shell`,
 * `custom`, ...) have no chat equivalent and are left out. A name seen twice keeps its first tool: chat
 * answers a call by name alone.
 */
export function flattenTools(raw: unknown, dropped: Set<string>): FlatTools | GatewayError {
  const flat: FlatTools = { tools: [], namespaces: new Map() };
  if (raw === undefined || raw === null) return flat;
  if (!Array.isArray(raw)) return Errors.invalidRequest('tools must be an array', 'tools');
  const seen = new Set<string>();
  const add = (fn: Json, where: string, namespace?: string): GatewayError | undefined => {
    const name = str(fn.name);
    if (name === undefined || name === '') return Errors.invalidRequest(`${where}.name must be a non-empty string`, `${where}.name`);
    if (seen.has(name)) {
      dropped.add(`${where} (a second tool named '${name}')`);
      return undefined;
    }
    seen.add(name);
    if (namespace !== undefined) flat.namespaces.set(name, namespace);
    flat.tools.push({ type: 'function', function: functionOf(fn, name) });
    return undefined;
  };
  for (const [i, tool] of raw.entries()) {
    if (!isRecord(tool)) return Errors.invalidRequest(`tools[${i}] must be an object`, `tools[${i}]`);
    if (tool.type === 'function') {
      const failed = add(tool, `tools[${i}]`);
      if (failed) return failed;
    } else if (tool.type === 'namespace' && typeof tool.name === 'string' && Array.isArray(tool.tools)) {
      for (const [j, fn] of tool.tools.entries()) {
        if (isRecord(fn) && fn.type === 'function') {
          const failed = add(fn, `tools[${i}].tools[${j}]`, tool.name);
          if (failed) return failed;
        } else dropped.add(`tools[${i}].tools[${j}] (type ${describeType(fn)})`);
      }
    } else dropped.add(`tools[${i}] (type ${describeType(tool)})`);
  }
  return flat;
}

function functionOf(fn: Json, name: string): Json {
  const out: Json = { name };
  if (typeof fn.description === 'string') out.description = fn.description;
  if (isRecord(fn.parameters)) out.parameters = fn.parameters;
  if (typeof fn.strict === 'boolean') out.strict = fn.strict;
  return out;
}

function describeType(value: unknown): string {
  return isRecord(value) && typeof value.type === 'string' ? value.type.slice(0, 64) : 'unknown';
}

/**
 * `tool_choice` in chat's shape. Only `auto`/`none`/`required` and a named function have one; an
 * `allowed_tools` choice keeps its mode (the subset is dropped), a hosted tool's choice is dropped.
 */
export function toolChoiceOf(raw: unknown, dropped: Set<string>): unknown {
  if (raw === undefined || raw === null) return undefined;
  if (raw === 'auto' || raw === 'none' || raw === 'required') return raw;
  if (isRecord(raw) && raw.type === 'function' && typeof raw.name === 'string') return { type: 'function', function: { name: raw.name } };
  if (isRecord(raw) && raw.type === 'allowed_tools' && (raw.mode === 'auto' || raw.mode === 'required')) {
    dropped.add('tool_choice.tools (allowed_tools subset)');
    return raw.mode;
  }
  dropped.add(`tool_choice (${typeof raw === 'string' ? raw.slice(0, 64) : describeType(raw)})`);
  return undefined;
}

/** The function names a client's `namespace` tools contribute (for answers: a call names its namespace again). */
export function namespacesOf(request: Json): Map<string, string> {
  const flat = flattenTools(request.tools, new Set());
  return flat instanceof GatewayError ? new Map() : flat.namespaces;
}
