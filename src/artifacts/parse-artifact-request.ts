import { Errors, GatewayError } from '../common/gateway-error';
import { ARTIFACT_ID_PATTERN, JOB_KIND, JsonObject, KIND_PATTERN, MAX_PARENTS, MAX_TAGS, SESSION_ID_PATTERN, TAG_PATTERN } from './artifact-record';
import type { ListPosition } from './artifact-store';

/** A validated `POST /v1/artifacts` body. */
export interface NewArtifact {
  kind: string;
  content: unknown;
  sessionId: string | null;
  tags: string[];
  parents: string[];
  metadata: JsonObject;
}

/** A validated `GET /v1/artifacts` query. */
export interface ArtifactListParams {
  sessionId?: string;
  tag?: string;
  kind?: string;
  limit: number;
  after?: ListPosition;
}

const BODY_FIELDS = ['kind', 'content', 'session_id', 'tags', 'parents', 'parent', 'metadata'];
const QUERY_PARAMS = ['session_id', 'tag', 'kind', 'limit', 'cursor'];
export const DEFAULT_LIST_LIMIT = 20;
export const MAX_LIST_LIMIT = 100;
/** Nesting of content and metadata (arrays and objects): deeper bodies are refused, not recursed into. */
export const MAX_DEPTH = 64;
const CURSOR = /^(\d{1,16}):([0-9a-f]{64})$/;

/**
 * The body of `POST /v1/artifacts` (a raw string: the gateway keeps bodies unparsed). Above
 * `maxBytes` it is a 413 before it is parsed; not JSON or not an object, a 400 `invalid_request`;
 * a field that is missing, unknown or malformed, a 400 `invalid_params` naming it.
 */
export function parseNewArtifact(raw: unknown, maxBytes: number): NewArtifact | GatewayError {
  const text = typeof raw === 'string' ? raw : '';
  if (Buffer.byteLength(text, 'utf8') > maxBytes) return Errors.payloadTooLarge(maxBytes);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return Errors.invalidRequest('Request body is not valid JSON');
  }
  if (!isObject(body)) return Errors.invalidRequest('Request body must be a JSON object');
  for (const field of Object.keys(body)) {
    if (!BODY_FIELDS.includes(field)) return Errors.invalidParams(`Unknown field '${shown(field)}' (known: ${BODY_FIELDS.join(', ')})`, field);
  }
  const { kind, content, session_id: sessionId, tags, metadata } = body;
  if (typeof kind !== 'string' || !KIND_PATTERN.test(kind)) {
    return Errors.invalidParams("'kind' must be a lower-case name of 1-32 characters (a-z 0-9 _ -), such as plan, summary, diff or trace", 'kind');
  }
  if (kind === JOB_KIND) return Errors.invalidParams("'kind' job is reserved for the artifacts the gateway records for tasks", 'kind');
  if (content === undefined || content === null) return Errors.invalidParams("'content' is required (any JSON value but null)", 'content');
  if (deeperThan(content, MAX_DEPTH)) return Errors.invalidParams(`'content' is nested deeper than ${MAX_DEPTH} levels`, 'content');
  if (sessionId !== undefined && sessionId !== null && (typeof sessionId !== 'string' || !SESSION_ID_PATTERN.test(sessionId))) {
    return Errors.invalidParams("'session_id' must be 1-128 characters of A-Z a-z 0-9 . _ : -", 'session_id');
  }
  const tagList = parseTags(tags);
  if (tagList instanceof GatewayError) return tagList;
  const parentList = parseLineage(body);
  if (parentList instanceof GatewayError) return parentList;
  if (metadata !== undefined && metadata !== null && !isObject(metadata)) return Errors.invalidParams("'metadata' must be a JSON object", 'metadata');
  if (deeperThan(metadata, MAX_DEPTH)) return Errors.invalidParams(`'metadata' is nested deeper than ${MAX_DEPTH} levels`, 'metadata');
  return {
    kind,
    content,
    sessionId: typeof sessionId === 'string' ? sessionId : null,
    tags: tagList,
    parents: parentList,
    metadata: isObject(metadata) ? metadata : {},
  };
}

/** The query of `GET /v1/artifacts`; every problem is a 400 `invalid_params` naming the parameter. */
export function parseListParams(raw: Record<string, unknown>): ArtifactListParams | GatewayError {
  for (const name of Object.keys(raw)) {
    if (!QUERY_PARAMS.includes(name)) return Errors.invalidParams(`Unknown query parameter '${shown(name)}' (known: ${QUERY_PARAMS.join(', ')})`, name);
  }
  const params: ArtifactListParams = { limit: DEFAULT_LIST_LIMIT };
  for (const name of QUERY_PARAMS) {
    const value = raw[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') return Errors.invalidParams(`Query parameter '${name}' must be given once`, name);
    switch (name) {
      case 'session_id':
        if (!SESSION_ID_PATTERN.test(value)) return Errors.invalidParams("Query parameter 'session_id' must be 1-128 characters of A-Z a-z 0-9 . _ : -", name);
        params.sessionId = value;
        break;
      case 'tag':
        if (!TAG_PATTERN.test(value)) return Errors.invalidParams("Query parameter 'tag' is not a valid tag", name);
        params.tag = value;
        break;
      case 'kind':
        if (!KIND_PATTERN.test(value)) return Errors.invalidParams("Query parameter 'kind' must be a lower-case name of 1-32 characters", name);
        params.kind = value;
        break;
      case 'limit': {
        const n = /^\d{1,4}$/.test(value) ? Number(value) : NaN;
        if (!(n >= 1 && n <= MAX_LIST_LIMIT)) return Errors.invalidParams(`Query parameter 'limit' must be an integer from 1 to ${MAX_LIST_LIMIT}`, name);
        params.limit = n;
        break;
      }
      case 'cursor': {
        const position = decodeCursor(value);
        if (!position) return Errors.invalidParams("Query parameter 'cursor' is not a cursor this API returned (next_cursor)", name);
        params.after = position;
        break;
      }
    }
  }
  return params;
}

/** An opaque `next_cursor`: the position of a page's last artifact. */
export function encodeCursor(p: ListPosition): string {
  return Buffer.from(`${p.createdAt}:${p.id}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): ListPosition | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return undefined;
  const m = CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return m ? { createdAt: Number(m[1]), id: m[2] } : undefined;
}

/**
 * An artifact's `tags` as a request gives them (absent or null: none); a malformed one is a 400
 * `invalid_params` naming it (`tags[1]`). Shared with the task API, whose job artifacts take them.
 */
export function parseTags(value: unknown): string[] | GatewayError {
  return stringList(value, 'tags', MAX_TAGS, TAG_PATTERN, '1-128 characters of A-Z a-z 0-9 . _ : / = + @ -, starting with a letter or digit');
}

/** An artifact's `parents` (lineage) as a request gives them: ids only, whether they exist is the caller's check. */
function parseParents(value: unknown): string[] | GatewayError {
  return stringList(value, 'parents', MAX_PARENTS, ARTIFACT_ID_PATTERN, 'an artifact id (64 lower-case hex characters)');
}

/**
 * Lineage as a body gives it: `parents` (a list) and the task API issue's `parent` (one id or a
 * list), both accepted; given together they are joined, `parents` first, each id once, and the
 * joined list is held to the same bound. A malformed entry is named by its field.
 */
export function parseLineage(body: Record<string, unknown>): string[] | GatewayError {
  const parents = parseParents(body.parents);
  if (parents instanceof GatewayError) return parents;
  const what = 'an artifact id (64 lower-case hex characters)';
  if (typeof body.parent === 'string' && !ARTIFACT_ID_PATTERN.test(body.parent))
    return Errors.invalidParams(`'parent' must be ${what} or a list of them`, 'parent');
  const single = typeof body.parent === 'string' ? [body.parent] : body.parent;
  const parent = stringList(single, 'parent', MAX_PARENTS, ARTIFACT_ID_PATTERN, what, true);
  if (parent instanceof GatewayError) return parent;
  if (parent.length === 0) return parents;
  const joined = [...new Set([...parents, ...parent])];
  if (joined.length > MAX_PARENTS)
    return Errors.invalidParams(`'parents' and 'parent' may hold at most ${MAX_PARENTS} ids together, got ${joined.length}`, 'parent');
  return joined;
}

function stringList(value: unknown, field: string, max: number, pattern: RegExp, what: string, orOne = false): string[] | GatewayError {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return Errors.invalidParams(`'${field}' must be ${orOne ? 'a string or ' : ''}a list of strings`, field);
  if (value.length > max) return Errors.invalidParams(`'${field}' may hold at most ${max} entries, got ${value.length}`, field);
  for (const [i, item] of value.entries()) {
    if (typeof item !== 'string' || !pattern.test(item)) return Errors.invalidParams(`'${field}[${i}]' must be ${what}`, `${field}[${i}]`);
  }
  return value as string[];
}

/** Whether `value` nests arrays or objects more than `max` levels deep (stops looking past `max`). */
function deeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (max === 0) return true;
  return (Array.isArray(value) ? value : Object.values(value)).some((v) => deeperThan(v, max - 1));
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A client's string echoed in a message: a bounded prefix. */
function shown(s: string): string {
  return s.length > 64 ? `${s.slice(0, 64)}…` : s;
}
