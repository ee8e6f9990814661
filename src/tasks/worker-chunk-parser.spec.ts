import { StreamUsage, WorkerChunkParser } from './worker-chunk-parser';

function collect(endpoint: '/v1/chat/completions' | '/v1/completions' = '/v1/chat/completions') {
  const texts: string[] = [];
  const usages: StreamUsage[] = [];
  const parser = new WorkerChunkParser(endpoint, { text: (t) => texts.push(t), usage: (u) => usages.push(u) });
  return { parser, texts, usages };
}

const chat = (content: unknown) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;

describe('WorkerChunkParser', () => {
  const stream =
    chat('Hel') +
    ': a comment\n\n' +
    'event: ignored\nid: 7\n' +
    chat('lo') +
    chat('') +
    chat(null) +
    `data: ${JSON.stringify({ choices: [{ delta: { role: 'assistant' } }] })}\n\n` +
    chat(' wörld 🙂') +
    `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 3 } })}\n\n` +
    'data: [DONE]\n\n';

  it('yields the non-empty chat deltas and the usage, ignoring comments, other fields and [DONE]', () => {
    const { parser, texts, usages } = collect();
    parser.feed(stream);
    expect(texts).toEqual(['Hel', 'lo', ' wörld 🙂']);
    expect(usages).toEqual([{ promptTokens: 5, completionTokens: 3 }]);
  });

  it('gives the same result however the stream is cut into chunks', () => {
    for (let size = 1; size <= 13; size++) {
      const { parser, texts, usages } = collect();
      for (let i = 0; i < stream.length; i += size) parser.feed(stream.slice(i, i + size));
      expect([size, texts, usages.length]).toEqual([size, ['Hel', 'lo', ' wörld 🙂'], 1]);
    }
  });

  it('reads CRLF and CR line ends, also when a chunk ends between CR and LF', () => {
    const crlf = stream.replace(/\n/g, '\r\n');
    for (const cut of [crlf.indexOf('\r\n') + 1, 17, 40]) {
      const { parser, texts } = collect();
      parser.feed(crlf.slice(0, cut));
      parser.feed(crlf.slice(cut));
      expect(texts).toEqual(['Hel', 'lo', ' wörld 🙂']);
    }
    const { parser, texts } = collect();
    parser.feed(stream.replace(/\n/g, '\r'));
    expect(texts).toEqual(['Hel', 'lo', ' wörld 🙂']);
  });

  it('joins multi-line data, skips what is not JSON, and dispatches a last event without a blank line at end()', () => {
    const { parser, texts } = collect();
    parser.feed('data: {"choices":[{"delta":\ndata: {"content":"joined"}}]}\n\n');
    parser.feed('data: not json\n\n');
    parser.feed(chat('tail').trimEnd());
    expect(texts).toEqual(['joined']);
    parser.end();
    expect(texts).toEqual(['joined', 'tail']);
  });

  it('reads choices[0].text for completions', () => {
    const { parser, texts } = collect('/v1/completions');
    parser.feed(`data: ${JSON.stringify({ choices: [{ text: ' Paris' }] })}\n\n` + chat('not a completion'));
    expect(texts).toEqual([' Paris']);
  });
});
