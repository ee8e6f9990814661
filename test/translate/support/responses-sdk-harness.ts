import OpenAI from 'openai';

/**
 * An `openai` client whose every request is answered with the given bytes, without a network: the SDK's
 * own SSE parsing, stream accumulator and error mapping judge what the codec produced.
 */
export function sdkAnsweredWith(status: number, body: string, contentType: string): OpenAI {
  return new OpenAI({
    apiKey: 'sk-test',
    baseURL: 'http://sdk.invalid/v1',
    maxRetries: 0,
    fetch: async () => new Response(body, { status, headers: { 'content-type': contentType } }),
  });
}

/** The parsed `data` of each SSE event in a Responses stream, in order. */
export function eventsOf(sse: string): Array<Record<string, any>> {
  return sse
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const type = lines.find((l) => l.startsWith('event: '))?.slice(7);
      const data = JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6));
      if (data.type !== type) throw new Error(`event line ${type} does not match data.type ${data.type}`);
      return data;
    });
}
