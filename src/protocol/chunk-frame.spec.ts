import fc from 'fast-check';
import { readChunkFrame } from './chunk-frame';
import { encodeMessage, parseWorkerMessage, ProtocolError } from './codec';

/** What parseWorkerMessage answered before the fast path: the whole frame through JSON.parse. */
function fullParse(text: string): unknown {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return 'protocol error';
  }
  if (!o || typeof o !== 'object' || Array.isArray(o) || o.type !== 'response_chunk') return 'not a chunk';
  if (typeof o.request_id !== 'string' || typeof o.chunk !== 'string') return 'protocol error';
  return { type: 'response_chunk', request_id: o.request_id, chunk: o.chunk };
}

function viaCodec(text: string): unknown {
  try {
    const m = parseWorkerMessage(text);
    return m.type === 'response_chunk' ? m : 'not a chunk';
  } catch (e) {
    if (e instanceof ProtocolError) return 'protocol error';
    throw e;
  }
}

describe('readChunkFrame', () => {
  it('reads the daemon layout, escapes and all', () => {
    const chunk = 'data: {"choices":[{"delta":{"content":"a \\"b\\" \\n é 😀"}}]}\n\n';
    const text = encodeMessage({ type: 'response_chunk', request_id: 'r-1', chunk });
    expect(readChunkFrame(text)).toEqual({ type: 'response_chunk', request_id: 'r-1', chunk });
    expect(Object.keys(readChunkFrame(text)!)).toEqual(['type', 'request_id', 'chunk']);
  });

  it.each([
    ['another key order', '{"request_id":"r","type":"response_chunk","chunk":"x"}'],
    ['an extra key after the chunk', '{"type":"response_chunk","request_id":"r","chunk":"x","more":1}'],
    ['a repeated chunk key (the last one wins)', '{"type":"response_chunk","request_id":"r","chunk":"x","chunk":"y"}'],
    ['an escaped request id', '{"type":"response_chunk","request_id":"r\\u0031","chunk":"x"}'],
    ['a chunk that is not a string', '{"type":"response_chunk","request_id":"r","chunk":7}'],
    ['trailing garbage', '{"type":"response_chunk","request_id":"r","chunk":"x"}}'],
    ['a raw control character in the id', '{"type":"response_chunk","request_id":"r\u0001","chunk":"x"}'],
    ['an unterminated chunk', '{"type":"response_chunk","request_id":"r","chunk":"x}'],
    ['a different frame', '{"type":"pong","current_load":1}'],
  ])('leaves %s to the full parse, with the same answer', (_label, text) => {
    expect(readChunkFrame(text)).toBeUndefined();
    expect(viaCodec(text)).toEqual(fullParse(text));
  });

  it('answers exactly what the full parse answers, for any chunk and id', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), fc.boolean(), (id, chunk, spaced) => {
        let text = JSON.stringify({ type: 'response_chunk', request_id: id, chunk });
        if (spaced) text = text.replace('"chunk":', '"chunk": ').replace(/}$/, ' }');
        expect(viaCodec(text)).toEqual(fullParse(text));
      }),
    );
  });

  it('answers exactly what the full parse answers for arbitrary text after the head', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (tail) => {
        const text = `{"type":"response_chunk","request_id":"r","chunk":${tail}`;
        expect(viaCodec(text)).toEqual(fullParse(text));
      }),
    );
  });
});
