import { StringDecoder } from 'node:string_decoder';
import { Clock, daemonClock } from '../../clock';
import { BackendClient, BackendResponse } from '../../requests/backend-client';
import { JsonObject, asObject } from '../probes/json';
import { OperationFailed } from './types';

/** A backend answer read whole, with its JSON when it has one. */
export interface Answer {
  status: number;
  text: string;
  /** The parsed body when it is JSON (object or array), else undefined. */
  json: unknown;
}

/** Longest backend message quoted in a lifecycle error (the gateway stores and shows it). */
const MESSAGE_MAX = 300;
/** Longest line of a progress stream: a body that never breaks its lines is not held whole. */
export const LINE_MAX = 64 * 1024;

/**
 * The daemon's own calls to the backend for lifecycle operations: each request gets a time limit
 * (on top of the operation's own signal), answers are read whole and parsed, and every failure
 * becomes an `OperationFailed` with a short message that names the call.
 */
export class LifecycleHttp {
  constructor(
    private readonly backend: BackendClient,
    private readonly requestTimeoutMs: number,
    private readonly clock: Clock = daemonClock,
  ) {}

  get(path: string, signal: AbortSignal): Promise<Answer> {
    return this.call('GET', path, signal);
  }

  post(path: string, body: unknown, signal: AbortSignal): Promise<Answer> {
    return this.call('POST', path, signal, body === undefined ? undefined : JSON.stringify(body));
  }

  /**
   * POSTs and hands back the body line by line as it arrives (NDJSON progress streams). The time
   * limit applies to the silence between two reads, not to the whole stream (a pull takes hours).
   */
  async postLines(path: string, body: unknown, signal: AbortSignal): Promise<{ status: number; lines: AsyncGenerator<string> }> {
    const idle = new AbortController();
    const both = AbortSignal.any([signal, idle.signal]);
    const { clock } = this;
    let timer = clock.setTimeout(() => idle.abort(), this.requestTimeoutMs);
    const rearm = () => {
      clock.clearTimeout(timer);
      timer = clock.setTimeout(() => idle.abort(), this.requestTimeoutMs);
    };
    let res: BackendResponse;
    try {
      res = await this.backend.post(path, JSON.stringify(body), undefined, both);
    } catch (err) {
      clock.clearTimeout(timer);
      throw this.failure('POST', path, err, idle.signal, signal);
    }
    rearm();
    const failure = (err: unknown) => this.failure('POST', path, err, idle.signal, signal);
    async function* lines(): AsyncGenerator<string> {
      let rest = '';
      // A character split between two chunks is decoded once both have arrived.
      const decoder = new StringDecoder('utf8');
      try {
        for await (const chunk of res.body) {
          rearm();
          rest += decoder.write(chunk as Buffer);
          let nl = rest.indexOf('\n');
          while (nl !== -1) {
            const line = rest.slice(0, nl).trim();
            rest = rest.slice(nl + 1);
            if (line) yield line;
            nl = rest.indexOf('\n');
          }
          if (rest.length > LINE_MAX)
            throw new OperationFailed(`POST ${shortPath(path)}: a line of the answer is longer than ${LINE_MAX} characters (not a progress stream)`);
        }
        rest += decoder.end();
        if (rest.trim()) yield rest.trim();
      } catch (err) {
        throw err instanceof OperationFailed ? err : failure(err);
      } finally {
        clock.clearTimeout(timer);
        res.body.destroy();
      }
    }
    return { status: res.status, lines: lines() };
  }

  private async call(method: 'GET' | 'POST', path: string, signal: AbortSignal, body?: string): Promise<Answer> {
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    try {
      const answer = await this.backend.call(method, path, AbortSignal.any([signal, timeout]), body, 1 << 20);
      return { status: answer.status, text: answer.text, json: parseJson(answer.text) };
    } catch (err) {
      throw this.failure(method, path, err, timeout, signal);
    }
  }

  /** The operation's own abort passes through untouched; the rest is named after the call. */
  private failure(method: string, path: string, err: unknown, timeout: AbortSignal, signal: AbortSignal): Error {
    if (signal.aborted) return err as Error;
    if (timeout.aborted) return new OperationFailed(`${method} ${shortPath(path)}: no answer within ${Math.round(this.requestTimeoutMs / 1000)} s`);
    return new OperationFailed(`${method} ${shortPath(path)}: ${(err as Error).message}`);
  }
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function shortPath(path: string): string {
  return path.split('?')[0];
}

/** The message in a backend's error body, whichever convention it follows. */
export function backendMessage(answer: Answer): string {
  const doc = asObject(answer.json);
  const candidates: unknown[] = [];
  if (doc) {
    const error = doc.error;
    candidates.push(asObject(error)?.message, error, doc.message, doc.detail);
  }
  const found = candidates.find((c): c is string => typeof c === 'string' && c.trim().length > 0);
  const text = (found ?? answer.text).replace(/\s+/g, ' ').trim();
  return text.length > MESSAGE_MAX ? `${text.slice(0, MESSAGE_MAX)}…` : text || '(empty body)';
}

export function isOk(answer: Answer): boolean {
  return answer.status >= 200 && answer.status <= 299;
}

/**
 * The server has no such route, or says it does not implement it: 405, 501, or a 404 that is the
 * framework's own ("Not Found", "File Not Found", no JSON). A 404 whose body says more came from a
 * handler (vLLM's "No adapter found at …", Ollama's "model … not found") and is a real failure.
 */
export function isMissingRoute(answer: Answer): boolean {
  if (answer.status === 405 || answer.status === 501) return true;
  if (answer.status !== 404) return false;
  return answer.json === undefined || /^(file )?not found\.?$/i.test(backendMessage(answer));
}

/** Throws `OperationFailed` naming the call unless the answer is 2xx. */
export function expectOk(answer: Answer, call: string): Answer {
  if (!isOk(answer)) throw new OperationFailed(`${call} answered ${answer.status}: ${backendMessage(answer)}`);
  return answer;
}

/** The JSON object of an answer, or `OperationFailed` when it is something else. */
export function objectOf(answer: Answer, call: string): JsonObject {
  const doc = asObject(answer.json);
  if (!doc) throw new OperationFailed(`${call} did not answer a JSON object`);
  return doc;
}
