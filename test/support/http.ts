/** Minimal HTTP helpers for asserting exact statuses, headers and bodies. */
import { withDeadline } from './deadline';

/** A response (headers and whole body) longer than this is a hang: tests hold requests for seconds, not a minute. */
export const HTTP_MS = 60_000;
export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export async function post(baseUrl: string, path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<RawResponse> {
  const res = fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  return withDeadline(res.then(readResponse), HTTP_MS, `POST ${path} got no complete answer`);
}

export async function get(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return withDeadline(fetch(`${baseUrl}${path}`, { headers }).then(readResponse), HTTP_MS, `GET ${path} got no complete answer`);
}

/** The whole body as text, and as JSON when it parses. */
async function readResponse(res: Response): Promise<RawResponse> {
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export function chat(model: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model, messages: [{ role: 'user', content: 'hello' }], ...extra };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls until `check` returns a truthy value (for state the test cannot await directly). `what`
 * names the condition in the error.
 */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 5000, what = 'condition'): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await withDeadline(Promise.resolve(check()), timeoutMs, `${what}: its check did not return`);
    if (v) return v;
    if (Date.now() > until) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await sleep(20);
  }
}

export async function admin(baseUrl: string, method: string, path: string, token: string, body?: unknown): Promise<RawResponse> {
  const call = async (): Promise<RawResponse> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
  };
  return withDeadline(call(), HTTP_MS, `${method} ${path} got no complete answer`);
}
