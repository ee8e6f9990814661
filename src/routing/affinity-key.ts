import type { AffinityConfig, AffinitySource } from '../config/sections/routing-affinity';

/** The client's own affinity key: requests carrying the same value go to the same worker while it has room. */
export const AFFINITY_HEADER = 'x-session-affinity';
/**
 * Session headers known clients already send on every request of one conversation:
 * Claude Code (2.1.86 and later) sends `x-claude-code-session-id`; OpenAI's Codex CLI sends
 * `session_id` (newer builds `session-id`). The first one present wins.
 */
export const CLIENT_SESSION_HEADERS = ['x-claude-code-session-id', 'session_id', 'session-id'] as const;

type Json = Record<string, unknown>;
type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** Affinity keys are 32-bit unsigned hashes; routing never sees the text they came from. */
export type AffinityKey = number;

/**
 * The request's affinity key under `config`, computed once when the request is parsed (never on
 * the routing path): the first source in `config.sources` that yields one, else undefined
 * (the request is routed as without affinity). `promptChars`: the request's prompt text length
 * (RequestRequirements.estimatedTokens × 4); prompts shorter than `config.minPrefixChars` get no
 * `prefix` key. Never throws: a field of the wrong shape counts as absent.
 */
export function affinityKeyOf(headers: Headers, endpoint: string, body: Json, config: AffinityConfig, promptChars: number): AffinityKey | undefined {
  for (const source of config.sources) {
    if (source === 'prefix' && promptChars < config.minPrefixChars) continue;
    const key = keyFrom(source, headers, endpoint, body, config.prefixChars);
    if (key !== undefined) return key;
  }
  return undefined;
}

function keyFrom(source: AffinitySource, headers: Headers, endpoint: string, body: Json, prefixChars: number): AffinityKey | undefined {
  switch (source) {
    case 'header':
      return textKey(source, header(headers, AFFINITY_HEADER));
    case 'session_header':
      for (const name of CLIENT_SESSION_HEADERS) {
        const v = header(headers, name);
        if (v) return textKey(source, v);
      }
      return undefined;
    case 'prompt_cache_key':
      return textKey(source, body.prompt_cache_key);
    case 'metadata.user_id':
      return textKey(source, isObject(body.metadata) ? body.metadata.user_id : undefined);
    case 'user':
      return textKey(source, body.user);
    case 'prefix':
      return prefixKey(endpoint, body, prefixChars);
  }
}

function header(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A non-empty string value, hashed with its source's name so `user: "a"` and a header "a" differ. */
function textKey(source: string, value: unknown): AffinityKey | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const h = new Fnv();
  h.text(source, Infinity);
  h.char(0);
  h.text(value.trim(), 1024);
  return h.value;
}

/**
 * The normalised start of the prompt: the system text and the first non-system message (role and
 * text, whitespace runs collapsed), at most `limit` characters. The first message is the one a
 * conversation's later turns and a batch's shared template repeat, so turn 1 and turn 9 of one
 * conversation share the key; later messages are left out because each turn adds some.
 */
function prefixKey(endpoint: string, body: Json, limit: number): AffinityKey | undefined {
  const h = new Fnv(limit);
  switch (endpoint) {
    case '/v1/chat/completions':
      leadingMessages(h, body.messages);
      break;
    case '/v1/messages':
      h.content(body.system);
      leadingMessages(h, body.messages);
      break;
    case '/v1/responses':
      h.content(body.instructions);
      if (typeof body.input === 'string') h.content(body.input);
      else leadingMessages(h, body.input);
      break;
    case '/v1/completions':
      h.content(typeof body.prompt === 'string' ? body.prompt : Array.isArray(body.prompt) ? body.prompt[0] : undefined);
      break;
    default:
      return undefined; // embeddings reuse no KV cache
  }
  return h.fed > 0 ? h.value : undefined;
}

/** System/developer messages in the lead, then the first other message. */
function leadingMessages(h: Fnv, messages: unknown): void {
  if (!Array.isArray(messages)) return;
  for (const m of messages) {
    if (!isObject(m) || h.full) return;
    const role = typeof m.role === 'string' ? m.role : '';
    h.text(role, 16);
    h.char(0x3a);
    h.content(m.content);
    if (role !== 'system' && role !== 'developer') return;
  }
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * FNV-1a (32 bits) fed character by character, whitespace runs folded into one space and at most
 * `limit` characters counted: no string is built, whatever the prompt's size.
 */
class Fnv {
  value = 0x811c9dc5;
  fed = 0;
  private space = false;

  constructor(private readonly limit = Infinity) {}

  get full(): boolean {
    return this.fed >= this.limit;
  }

  char(c: number): void {
    this.value = Math.imul(this.value ^ c, 0x01000193) >>> 0;
  }

  text(s: string, max: number): void {
    const end = Math.min(s.length, max);
    for (let i = 0; i < end && this.fed < this.limit; i++) {
      const c = s.charCodeAt(i);
      const ws = c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d;
      if (ws) {
        this.space = this.fed > 0;
        continue;
      }
      if (this.space) {
        this.char(0x20);
        this.fed++;
        this.space = false;
      }
      this.char(c);
      this.fed++;
    }
  }

  /** A content field: a string, or a list of parts whose text parts count. */
  content(content: unknown): void {
    if (typeof content === 'string') this.text(content, Infinity);
    else if (Array.isArray(content)) {
      for (const part of content) if (isObject(part) && typeof part.text === 'string') this.text(part.text, Infinity);
    }
  }
}

/** A 32-bit mix of two hashes (murmur3's finaliser over their xor): a worker's weight for a key. */
export function mixHash(key: number, worker: number): number {
  let h = (key ^ worker) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A worker's affinity hash: of its name, so the same worker keeps its keys across reconnects. */
export function nameHash(name: string): number {
  const h = new Fnv();
  for (let i = 0; i < name.length; i++) h.char(name.charCodeAt(i));
  return mixHash(h.value, 0x9e3779b9);
}
