import { INTERNAL_PREFIX } from '../cluster/internal-link';

/**
 * The link between two replicas: one WebSocket from the calling replica to the owner of a worker
 * (`LINK_PATH` at the owner's advertised address, the cluster secret in the upgrade's headers),
 * kept open and shared by every request the caller forwards there. One text message each:
 *
 * - caller → owner: a request (`LinkRequestHead` as one line of JSON, then `\n` and the client's
 *   body, raw) or a cancel (`{"t":"cancel","id":…}`);
 * - owner → caller: the worker's frames for forwarded requests, as the worker protocol's JSON
 *   (a JSON object, carrying its `request_id`), or a refusal (`!` then `{"t":"refused","id":…,"code":…}`)
 *   when the request never reached the worker. The `!` sets the link's own messages apart from
 *   any JSON a worker's frame serialises to, whatever keys the worker put in it.
 *
 * Each replica publishes the version of this protocol it speaks with its workers on the fleet board
 * (`LINK_VERSION`), and none forwards to a replica whose version it does not speak: during a rolling
 * upgrade across a change of this protocol, each side serves its requests with its own side's workers
 * (see docs/cluster.md). Each end still checks every message: a peer is authenticated, not trusted
 * to be well-formed.
 */
export const LINK_PATH = `${INTERNAL_PREFIX}/link`;

/**
 * This link protocol's version. A release that changes the messages below gives it a new number, and
 * `speaksLink` accepts the versions a release can serve on both ends.
 */
export const LINK_VERSION = 1;

/**
 * Whether this replica can forward to a replica that published `version`. Absent means 1: the
 * release that introduced this link did not publish it yet.
 */
export function speaksLink(version: unknown): boolean {
  return (version ?? 1) === LINK_VERSION;
}

/** A forwarded request's first line: the `request` frame without its body (which follows, raw). */
export interface LinkRequestHead {
  t: 'req';
  /** The request id (the `request` frame's `request_id`). */
  id: string;
  /** The worker, by id, at the owner replica. */
  worker: string;
  model: string;
  endpoint_path: string;
  is_streaming: boolean;
  headers?: Record<string, string>;
}

/** Why the owner did not send a request to its worker. */
export type RefusalCode =
  /** No free slot after all (its published load was old): the caller routes it again. */
  | 'slot_taken'
  /** The worker is not connected to that replica (any more). */
  | 'worker_gone'
  /** The message could not be read. */
  | 'malformed';

/** An owner's message that is the link's own (a refusal), not a worker frame (which is JSON, starting `{`). */
export function isLinkControl(text: string): boolean {
  return text.charCodeAt(0) === 33; // '!'
}

/**
 * The largest request message a replica accepts on its links: the client's body (up to
 * MAX_BODY_BYTES; a translated one may be longer) and a line of head. Both ends compute it from
 * their own setting; a message above the receiver's cap would close the whole link (ws closes 1009),
 * so the caller checks it first and fails only that request.
 */
export function linkRequestCap(maxBodyBytes: number): number {
  return 2 * maxBodyBytes + 1024 * 1024;
}

export function encodeRequest(head: LinkRequestHead, body: string): string {
  return `${JSON.stringify(head)}\n${body}`;
}

export function encodeCancel(id: string): string {
  return JSON.stringify({ t: 'cancel', id });
}

export function encodeRefusal(id: string, code: RefusalCode): string {
  return `!${JSON.stringify({ t: 'refused', id, code })}`;
}

const MAX_ID = 256;

/** What a caller sent, read and checked; undefined when it is not a well-formed request or cancel. */
export type CallerMessage = { head: LinkRequestHead; body: string } | { cancel: string };

export function readCallerMessage(text: string): CallerMessage | undefined {
  const nl = text.indexOf('\n');
  const o = parseObject(nl < 0 ? text : text.slice(0, nl));
  if (!o) return undefined;
  if (o.t === 'cancel') return nl < 0 && isId(o.id) ? { cancel: o.id } : undefined;
  if (o.t !== 'req' || nl < 0) return undefined;
  const { id, worker, model, endpoint_path, is_streaming, headers } = o;
  if (!isId(id) || !isId(worker) || !isId(model) || typeof is_streaming !== 'boolean') return undefined;
  if (typeof endpoint_path !== 'string' || !endpoint_path.startsWith('/') || endpoint_path.length > 2048) return undefined;
  if (headers !== undefined && !isStringMap(headers)) return undefined;
  const head: LinkRequestHead = { t: 'req', id, worker, model, endpoint_path, is_streaming, ...(headers ? { headers } : {}) };
  return { head, body: text.slice(nl + 1) };
}

/** A refusal from the owner, read and checked; undefined when the control message is anything else. */
export function readRefusal(text: string): { id: string; code: RefusalCode } | undefined {
  const o = parseObject(text.slice(1));
  if (!o || o.t !== 'refused' || !isId(o.id)) return undefined;
  const code = o.code === 'slot_taken' || o.code === 'worker_gone' ? o.code : 'malformed';
  return { id: o.id, code };
}

/** A request id as the owner may name it in a message (a peer's message is checked like any input). */
export function isId(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_ID;
}

function parseObject(line: string): Record<string, unknown> | undefined {
  try {
    const o = JSON.parse(line) as unknown;
    return o && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function isStringMap(v: unknown): v is Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
  return Object.values(v as Record<string, unknown>).every((s) => typeof s === 'string');
}
