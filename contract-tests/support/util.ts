import { randomBytes } from 'node:crypto';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A short random id, unique enough to keep models/providers of different tests apart. */
export function uid(): string {
  return randomBytes(4).toString('hex');
}

/** A model name nobody else in the suite uses. */
export function uniqueModel(label = 'model'): string {
  return `ct-${label}-${uid()}`;
}

/**
 * Polls `probe` until it returns a truthy value; only for *waiting*, never for asserting speed.
 * Rejects with `what` when the generous deadline passes.
 */
export async function waitUntil<T>(
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    }
    await sleep(intervalMs);
  }
}

/** Resolves with the promise's value, or rejects with a descriptive error after `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]);
}

export function chatBody(model: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], ...extra });
}

export function messagesBody(model: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hello' }], ...extra });
}
