import { answerText } from './mock-backend';

/** What one client saw. */
export interface Outcome {
  tag: string;
  target: string;
  stream: boolean;
  /** HTTP status, 0 when the connection failed. */
  status: number;
  /** The assistant's text as the client assembled it. */
  text: string;
  /** A stream's `data: [DONE]` arrived. */
  done: boolean;
  /** A stream carried an error event (`"error"` in a data line). */
  errorEvent: boolean;
  /** The first bytes of the body arrived. */
  started: boolean;
  /** The whole answer, exactly once: status 200, the tag's text, a clean end. */
  ok: boolean;
  /** The body (or the connection error), for a failure's message. */
  raw: string;
  /** The replica that answered, when a balancer said so (`x-upstream`). */
  upstream?: string;
  /** When it was sent and when its answer ended (ms since the epoch). */
  sentAt: number;
  endedAt: number;
}

let counter = 0;

/** A unique tag for a request: the backend sees it as the first message. */
export function newTag(prefix: string): string {
  return `${prefix}-${++counter}`;
}

/** Sends one chat completion tagged `tag` and reads its answer to the end, whatever happens. */
export async function send(target: string, model: string, tag: string, stream: boolean, live?: Map<string, Outcome>): Promise<Outcome> {
  const out: Outcome = {
    tag,
    target,
    stream,
    status: 0,
    text: '',
    done: false,
    errorEvent: false,
    started: false,
    ok: false,
    raw: '',
    sentAt: Date.now(),
    endedAt: 0,
  };
  live?.set(tag, out);
  try {
    const res = await fetch(`${target}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: tag }] }),
      signal: AbortSignal.timeout(60_000),
    });
    out.status = res.status;
    out.upstream = res.headers.get('x-upstream') ?? undefined;
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      out.started = true;
      out.raw += decoder.decode(value, { stream: true });
    }
  } catch (e) {
    out.raw += `\n[connection: ${(e as Error).message}]`;
  }
  if (stream) {
    for (const line of out.raw.split('\n')) {
      if (!line.startsWith('data: ')) continue;
      const data = line.slice(6);
      if (data === '[DONE]') out.done = true;
      else if (data.includes('"error"')) out.errorEvent = true;
      else out.text += (JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content ?? '';
    }
  } else if (out.status === 200) {
    try {
      out.text = (JSON.parse(out.raw) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content;
    } catch {
      out.text = '';
    }
  }
  out.endedAt = Date.now();
  out.ok = out.status === 200 && out.text === answerText(tag) && (!stream || (out.done && !out.errorEvent));
  live?.delete(tag);
  return out;
}

export interface Load {
  /** Requests answered so far. */
  readonly outcomes: Outcome[];
  /** Requests under way, by tag. */
  readonly live: Map<string, Outcome>;
  /** Stops sending and resolves with every outcome once the last answer is in. */
  stop(): Promise<Outcome[]>;
}

/**
 * Steady load: `loops` clients, each sending one request after the other (streaming and
 * non-streaming in turn) to `targets()` round robin, until stop().
 */
export function steadyLoad(prefix: string, targets: () => string[], model: string, loops = 6): Load {
  const outcomes: Outcome[] = [];
  const live = new Map<string, Outcome>();
  let running = true;
  let turn = 0;
  const loop = async (i: number) => {
    for (let n = 0; running; n++) {
      const list = targets();
      outcomes.push(await send(list[turn++ % list.length], model, newTag(prefix), (n + i) % 2 === 0, live));
    }
  };
  const all = Promise.all(Array.from({ length: loops }, (_, i) => loop(i)));
  return {
    outcomes,
    live,
    async stop() {
      running = false;
      await all;
      return outcomes;
    },
  };
}

/** A readable list of failed outcomes for an assertion's message. */
export function describeFailures(outcomes: readonly Outcome[]): string {
  return outcomes
    .filter((o) => !o.ok)
    .map(
      (o) =>
        `${o.tag} ${o.stream ? 'stream' : 'plain'} via ${o.target}${o.upstream ? ` (${o.upstream})` : ''} ` +
        `[${new Date(o.sentAt).toISOString().slice(11)}–${new Date(o.endedAt).toISOString().slice(11)}]: ${o.status} ${brief(o.raw)}`,
    )
    .join('\n');
}

/** The start and the end of a body (a stream's error event is at its end). */
function brief(raw: string): string {
  const text = raw.length > 420 ? `${raw.slice(0, 120)} … ${raw.slice(-300)}` : raw;
  return text.replace(/\n/g, '\\n');
}
