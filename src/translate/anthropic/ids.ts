import { randomBytes } from 'node:crypto';

/** Ids in Anthropic's style (`msg_…`, `toolu_…`): URL-safe characters only, as tool ids must match `^[a-zA-Z0-9_-]+$`. */
export function newId(prefix: 'msg' | 'toolu'): string {
  return `${prefix}_${randomBytes(18).toString('base64url')}`;
}
