/** Minimal HTTP helpers for asserting exact statuses, headers and bodies. */
export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export async function post(baseUrl: string, path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<RawResponse> {
  const res = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  return readResponse(res);
}

export async function get(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return readResponse(await fetch(`${baseUrl}${path}`, { headers }));
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

/** Polls until `check` returns a truthy value (for state the test cannot await directly). */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 5000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error('condition not met in time');
    await sleep(20);
  }
}

export async function admin(baseUrl: string, method: string, path: string, token: string, body?: unknown): Promise<RawResponse> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}
