import { Errors, GatewayError } from '../../common/gateway-error';
import type { Json } from '../dialect-codec';
import { isRecord, str } from './shapes';

/** The client's tools as chat function tools, and which function names came from a `namespace` tool. */
export interface FlatTools {
  tools: Json[];
  namespaces: Map<string, string>;
  /** The names of `custom` (freeform) tools, sent as functions taking one string `input`. */
  custom: Set<string>;
}

/** A freeform tool's one parameter: chat tools take JSON arguments, so its free text rides in `input`. */
const CUSTOM_PARAMETERS: Json = { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] };

/**
 * Chat knows only function tools: a `namespace` (a named group of functions, as Codex sends for MCP
 * servers) is flattened into its functions. A `custom` tool (freeform input, such as Codex's
 * `apply_patch`) is run by the client, so it becomes a function with one string parameter `input` (its
 * `format` grammar has no chat equivalent and is dropped). Hosted tools (`web_search`, `file_search`,
 * `local_shell`, ...) have no chat equivalent and are left out. A name seen twice keeps its first tool:
 * chat answers a call by name alone.
 */
export function flattenTools(raw: unknown, dropped: Set<string>): FlatTools | GatewayError {
  const flat: FlatTools = { tools: [], namespaces: new Map(), custom: new Set() };
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
    if (fn.type === 'custom') {
      flat.custom.add(name);
      if (fn.format != null) dropped.add(`${where}.format`);
      const custom: Json = { name, parameters: CUSTOM_PARAMETERS };
      if (typeof fn.description === 'string') custom.description = fn.description;
      flat.tools.push({ type: 'function', function: custom });
    } else flat.tools.push({ type: 'function', function: functionOf(fn, name) });
    return undefined;
  };
  for (const [i, tool] of raw.entries()) {
    if (!isRecord(tool)) return Errors.invalidRequest(`tools[${i}] must be an object`, `tools[${i}]`);
    if (tool.type === 'function' || tool.type === 'custom') {
      const failed = add(tool, `tools[${i}]`);
      if (failed) return failed;
    } else if (tool.type === 'namespace' && typeof tool.name === 'string' && Array.isArray(tool.tools)) {
      for (const [j, fn] of tool.tools.entries()) {
        if (isRecord(fn) && (fn.type === 'function' || fn.type === 'custom')) {
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

/**
 * What answers need of the client's tools: which names came from a `namespace` (a call names it again)
 * and which are `custom` tools (a call to one is given back as a `custom_tool_call`).
 */
export function flatToolsOf(request: Json): FlatTools {
  const flat = flattenTools(request.tools, new Set());
  return flat instanceof GatewayError ? { tools: [], namespaces: new Map(), custom: new Set() } : flat;
}

/** A custom tool call's input: the `input` string of its arguments, else the arguments' raw text. */
export function customInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (isRecord(parsed) && typeof parsed.input === 'string') return parsed.input;
  } catch {
    // not JSON: the model wrote the freeform input itself
  }
  return args;
}
