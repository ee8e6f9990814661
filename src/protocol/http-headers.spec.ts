import { forwardableHeaders, isHopByHopHeader } from './http-headers';

describe('forwardableHeaders', () => {
  it('drops the hop-by-hop and framing headers of RFC 9110 §7.6.1', () => {
    const out = forwardableHeaders({
      host: 'gw.example.com',
      'content-length': '12',
      connection: 'keep-alive',
      'keep-alive': 'timeout=5',
      'transfer-encoding': 'chunked',
      upgrade: 'websocket',
      te: 'trailers',
      trailer: 'x-checksum',
      'content-type': 'application/json',
    });
    expect(out).toEqual({ 'content-type': 'application/json' });
  });

  it('drops every proxy-* header, whatever its case', () => {
    expect(forwardableHeaders({ 'Proxy-Authorization': 'Basic abc', 'proxy-connection': 'keep-alive', 'PROXY-X': '1', accept: '*/*' })).toEqual({
      accept: '*/*',
    });
    expect(isHopByHopHeader('proxy-authenticate')).toBe(true);
    expect(isHopByHopHeader('authorization')).toBe(false);
  });

  it('drops the headers the Connection header nominates, case-insensitively, and keeps the others', () => {
    const out = forwardableHeaders({
      Connection: 'Keep-Alive, X-Trace-Hop ,  x-Debug-Token,',
      'X-TRACE-HOP': 'abc',
      'x-debug-token': 'secret-ish',
      'X-Request-Id': 'r-1',
      authorization: 'Bearer k',
    });
    expect(out).toEqual({ 'x-request-id': 'r-1', authorization: 'Bearer k' });
  });

  it('reads Connection tokens from a multi-valued (array) Connection header too', () => {
    const out = forwardableHeaders({ connection: ['close', 'X-A'], 'x-a': '1', 'x-b': '2' });
    expect(out).toEqual({ 'x-b': '2' });
  });

  it('nominates exact names only: "x-a" does not remove "x-ab"', () => {
    expect(forwardableHeaders({ connection: 'x-a', 'x-ab': '1' })).toEqual({ 'x-ab': '1' });
  });

  it('lowercases header names', () => {
    expect(forwardableHeaders({ 'Content-Type': 'application/json', 'Anthropic-Version': '2023-06-01' })).toEqual({
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
    });
  });

  it('joins array values with ", " and skips undefined values', () => {
    expect(forwardableHeaders({ accept: ['application/json', 'text/event-stream'], 'x-missing': undefined })).toEqual({
      accept: 'application/json, text/event-stream',
    });
  });

  it('returns undefined when nothing is left', () => {
    expect(forwardableHeaders({})).toBeUndefined();
    expect(forwardableHeaders({ connection: 'x-only', 'x-only': '1', host: 'h', 'x-none': undefined })).toBeUndefined();
  });
});
