import type { TestGateway } from '../support/gateway';
import { post, RawResponse } from '../support/http';
import type { ScriptedWorker } from '../support/scripted-worker';

export interface TaskEvent {
  id: number;
  event: string;
  data: any;
}

/** A chat task body with the given extra fields. */
export function chatTask(model: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model, messages: [{ role: 'user', content: 'hello' }], max_tokens: 16, ...extra };
}

export function submit(gw: TestGateway, body: unknown, headers: Record<string, string> = {}): Promise<RawResponse> {
  return post(gw.url, '/v1/tasks', body, headers);
}

export async function getJson(gw: TestGateway, path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  const res = await fetch(`${gw.url}${path}`, { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

export function cancel(gw: TestGateway, id: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return post(gw.url, `/v1/tasks/${id}/cancel`, '', headers);
}

/** One OpenAI chat-completion SSE chunk carrying `content`. */
export function chatDelta(content: string | undefined, extra: Record<string, unknown> = {}): string {
  const delta = content === undefined ? { role: 'assistant' } : { content };
  return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
}

/** Ends a streamed request on the worker: `[DONE]` and the completion frame. */
export function finish(worker: ScriptedWorker, requestId: string): void {
  worker.chunk(requestId, 'data: [DONE]\n\n');
  worker.complete(requestId, '', 200, { body: '' });
}

/** Parses SSE text into events (comments dropped); a trailing partial event is left out. */
export function parseSse(text: string): { events: TaskEvent[]; comments: string[] } {
  const events: TaskEvent[] = [];
  const comments: string[] = [];
  for (const block of text.split('\n\n').slice(0, -1)) {
    let id = NaN;
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) comments.push(line.slice(1).trim());
      else if (line.startsWith('id: ')) id = Number(line.slice(4));
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length) events.push({ id, event, data: JSON.parse(data.join('\n')) });
  }
  return { events, comments };
}

/**
 * A reader of `GET /v1/tasks/:id/stream` that collects events as they arrive; tests wait for the
 * events they need, and `done` resolves when the gateway ends the stream.
 */
export class TaskStream {
  text = '';
  status = 0;
  headers: Headers | undefined;
  readonly done: Promise<void>;
  private readonly controller = new AbortController();
  private wake: () => void = () => undefined;

  constructor(gw: TestGateway, id: string, headers: Record<string, string> = {}) {
    this.done = this.read(`${gw.url}/v1/tasks/${id}/stream`, headers);
  }

  get events(): TaskEvent[] {
    return parseSse(this.text).events;
  }

  get comments(): string[] {
    return parseSse(this.text).comments;
  }

  /** Resolves once `check` holds for the events received so far (or fails after `timeoutMs`). */
  async until(check: (events: TaskEvent[]) => boolean, timeoutMs = 10_000): Promise<TaskEvent[]> {
    const deadline = Date.now() + timeoutMs;
    let ended = false;
    this.done.finally(() => (ended = true)).catch(() => undefined);
    for (;;) {
      const events = this.events;
      if (check(events)) return events;
      if (ended) throw new Error(`stream ended without the expected events: ${JSON.stringify(events)}`);
      if (Date.now() > deadline) throw new Error(`expected events did not arrive: ${JSON.stringify(events)}`);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  }

  close(): void {
    this.controller.abort();
  }

  private async read(url: string, headers: Record<string, string>): Promise<void> {
    const res = await fetch(url, { headers, signal: this.controller.signal });
    this.status = res.status;
    this.headers = res.headers;
    if (!res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        this.text += decoder.decode(chunk, { stream: true });
        this.wake();
      }
    } catch (e) {
      if ((e as Error).name !== 'AbortError') throw e;
    }
    this.wake();
  }
}

/** Reads a whole stream of a finished task (it ends at once). */
export async function readStream(
  gw: TestGateway,
  id: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; events: TaskEvent[] }> {
  const res = await fetch(`${gw.url}/v1/tasks/${id}/stream`, { headers });
  const text = await res.text();
  return { status: res.status, text, events: res.status === 200 ? parseSse(text).events : [] };
}
