import { Readable } from 'node:stream';
import type { BackendClient } from '../../requests/backend-client';
import { LINE_MAX, LifecycleHttp } from './backend-http';
import { OperationFailed } from './types';

/** A backend whose POST answers 200 with exactly these body chunks. */
function answering(chunks: Buffer[]): LifecycleHttp {
  const backend = { post: async () => ({ status: 200, headers: undefined, body: Readable.from(chunks) }) } as unknown as BackendClient;
  return new LifecycleHttp(backend, 5_000);
}

async function read(http: LifecycleHttp): Promise<string[]> {
  const { lines } = await http.postLines('/api/pull', {}, new AbortController().signal);
  const out: string[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

describe('LifecycleHttp.postLines', () => {
  it('keeps a character whose bytes arrive in two chunks whole', async () => {
    const line = Buffer.from('{"error":"modèle introuvable"}\n', 'utf8');
    const cut = line.indexOf(Buffer.from('è', 'utf8')) + 1; // between the two bytes of è
    expect(await read(answering([line.subarray(0, cut), line.subarray(cut)]))).toEqual(['{"error":"modèle introuvable"}']);
  });

  it('refuses a line longer than LINE_MAX instead of holding a body that never breaks its lines', async () => {
    const chunk = Buffer.alloc(16 * 1024, 'x');
    const chunks = Array.from({ length: 2 * (LINE_MAX / chunk.length) }, () => chunk);
    const reading = read(answering(chunks));
    await expect(reading).rejects.toThrow(OperationFailed);
    await expect(reading).rejects.toThrow(`POST /api/pull: a line of the answer is longer than ${LINE_MAX} characters`);
  });
});
