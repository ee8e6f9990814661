import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AdminActor } from './admin-actor';

interface Session {
  actor: AdminActor;
  /** The token a mutating call made with the session cookie must echo in `x-csrf-token`. */
  csrf: string;
  expiresAt: number;
}

/** Bound on live sessions, so a flood of logins cannot grow memory without limit (the oldest leaves first). */
const MAX_SESSIONS = 10_000;

/**
 * Dashboard sessions, held server-side (so logout ends one at once) and named in the browser by a
 * random id signed with a key drawn at process start. Sessions therefore live in one gateway
 * process: a restart signs everyone out, and replicas behind a load balancer need sticky sessions.
 * The same key signs the short-lived login-state cookie (state, nonce, PKCE verifier).
 */
export class SsoSessions {
  private readonly key = randomBytes(32);
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /** Opens a session; returns the cookie value and the CSRF token. */
  open(actor: AdminActor): { cookie: string; csrf: string } {
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value as string);
    const id = randomBytes(32).toString('base64url');
    const csrf = randomBytes(24).toString('base64url');
    this.sessions.set(id, { actor, csrf, expiresAt: this.now() + this.ttlMs });
    return { cookie: this.sign(id), csrf };
  }

  /** The live session a cookie value names, or undefined (unsigned, unknown, ended or expired). */
  find(cookie: string | undefined): Session | undefined {
    const id = this.unsign(cookie);
    const s = id === undefined ? undefined : this.sessions.get(id);
    if (!s || !id) return undefined;
    if (s.expiresAt <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    return s;
  }

  /** Ends the session a cookie names (logout); the cookie is worthless from then on. */
  close(cookie: string | undefined): boolean {
    const id = this.unsign(cookie);
    return id !== undefined && this.sessions.delete(id);
  }

  /** Whether `presented` is the session's CSRF token (constant time). */
  csrfMatches(session: Session, presented: string | undefined): boolean {
    if (!presented) return false;
    const a = Buffer.from(session.csrf);
    const b = Buffer.from(presented);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  sign(value: string): string {
    return `${value}.${this.mac(value)}`;
  }

  /** The value of a signed string, or undefined when the signature is not ours. */
  unsign(signed: string | undefined): string | undefined {
    if (!signed) return undefined;
    const dot = signed.lastIndexOf('.');
    if (dot <= 0) return undefined;
    const value = signed.slice(0, dot);
    const a = Buffer.from(signed.slice(dot + 1));
    const b = Buffer.from(this.mac(value));
    return a.length === b.length && timingSafeEqual(a, b) ? value : undefined;
  }

  size(): number {
    return this.sessions.size;
  }

  private mac(value: string): string {
    return createHmac('sha256', this.key).update(value).digest('base64url');
  }
}

/** One cookie's value from a Cookie header (first occurrence), without a cookie library. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}
