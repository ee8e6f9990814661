import { clientResponseHeaders } from './response-headers';

describe('clientResponseHeaders', () => {
  it('passes content headers, openai-*, anthropic-*, request ids, cache headers and backend ids', () => {
    const kept = {
      'content-type': 'application/json',
      'content-language': 'en',
      'openai-model': 'gpt-x',
      'openai-processing-ms': '12',
      'anthropic-ratelimit-requests-remaining': '9',
      'request-id': 'req_1',
      'x-request-id': 'abc',
      'x-cache-hit': 'true',
      'x-cache-tokens-reused': '100',
      'x-backend': 'vllm',
    };
    expect(clientResponseHeaders(kept)).toEqual(kept);
  });

  it('lowercases names and keeps content-encoding only when it is identity (the body crossed as decoded text)', () => {
    expect(clientResponseHeaders({ 'Content-Type': 'text/plain', 'Content-Encoding': 'gzip' })).toEqual({ 'content-type': 'text/plain' });
    expect(clientResponseHeaders({ 'content-encoding': 'identity' })).toEqual({ 'content-encoding': 'identity' });
  });

  it('drops hop-by-hop and framing headers, and those the Connection header names', () => {
    expect(
      clientResponseHeaders({
        connection: 'close, x-trace',
        'x-trace': '1',
        'keep-alive': 'timeout=5',
        'transfer-encoding': 'chunked',
        'content-length': '10',
        upgrade: 'h2c',
        te: 'trailers',
        trailer: 'x',
        'proxy-authenticate': 'Basic',
        'x-kept': 'yes',
      }),
    ).toEqual({ 'x-kept': 'yes' });
  });

  it('drops cookies, CORS, CSP and security headers, and other standard headers the gateway owns', () => {
    const dropped = {
      'set-cookie': 'session=1',
      'access-control-allow-origin': '*',
      'access-control-allow-credentials': 'true',
      'content-security-policy': "default-src 'none'",
      'content-security-policy-report-only': 'x',
      'strict-transport-security': 'max-age=0',
      'x-frame-options': 'ALLOWALL',
      'x-xss-protection': '0',
      'x-content-type-options': 'none',
      'x-content-security-policy': 'x',
      'referrer-policy': 'unsafe-url',
      'permissions-policy': 'camera=*',
      'cross-origin-resource-policy': 'cross-origin',
      'clear-site-data': '"*"',
      location: 'https://evil.example',
      refresh: '0; url=https://evil.example',
      link: '<https://evil.example>; rel=preload',
      'cache-control': 'public, max-age=31536000',
      'www-authenticate': 'Basic',
      'alt-svc': 'h3=":443"',
      server: 'evil',
      'x-powered-by': 'php',
      'x-accel-redirect': '/internal',
      'x-sendfile': '/etc/passwd',
      'x-forwarded-for': '1.2.3.4',
      'x-switchboard-model': 'forged',
      'x-correlation-id': 'forged',
      'x-queue-wait-ms': '0',
      'x-backoff-ms': '0',
      'x-budget-remaining-tokens': '999999',
    };
    expect(clientResponseHeaders(dropped)).toEqual({});
  });

  it("renames the backend's rate-limit advice so it cannot pose as the gateway's", () => {
    expect(
      clientResponseHeaders({
        'x-ratelimit-limit-requests': '999999',
        'x-ratelimit-remaining-tokens': '999999',
        'retry-after': '3',
        'x-backend-ratelimit-limit-requests': 'backend-sent-this-name',
      }),
    ).toEqual({
      'x-backend-ratelimit-limit-requests': '999999',
      'x-backend-ratelimit-remaining-tokens': '999999',
      'x-backend-retry-after': '3',
    });
  });

  it('applies a sendable test to what goes out, renamed headers included (an unsendable renamed value sends neither)', () => {
    const noNewlines = (_name: string, value: string) => !value.includes('\n');
    expect(clientResponseHeaders({ 'x-a': 'ok', 'x-b': 'bad\nvalue', 'x-ratelimit-remaining-requests': '5' }, noNewlines)).toEqual({
      'x-a': 'ok',
      'x-backend-ratelimit-remaining-requests': '5',
    });
    expect(clientResponseHeaders({ 'x-backend-retry-after': '1', 'retry-after': 'bad\n' }, noNewlines)).toEqual({});
    expect(clientResponseHeaders({ 'x-backend-retry-after': '1', 'retry-after': '2' }, noNewlines)).toEqual({ 'x-backend-retry-after': '2' });
  });

  it('answers an empty set for no headers', () => {
    expect(clientResponseHeaders(undefined)).toEqual({});
    expect(clientResponseHeaders({})).toEqual({});
  });
});
