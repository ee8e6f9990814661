import { RELAYABLE_ENDPOINTS, checkEndpoint, normaliseEndpointPath } from './endpoint-path';

describe('normaliseEndpointPath', () => {
  it.each([
    ['/v1/chat/completions', '/v1/chat/completions'],
    ['/v1/%63hat/completions', '/v1/chat/completions'],
    ['/v1/./chat/completions', '/v1/chat/completions'],
    ['/v1/%2e/chat/completions', '/v1/chat/completions'],
    ['/v1/chat/completions/', '/v1/chat/completions/'],
  ])('decodes escapes and drops "." segments: %s → %s', (raw, path) => {
    expect(normaliseEndpointPath(raw)).toEqual({ ok: true, path, query: undefined });
  });

  it('splits off the query string', () => {
    expect(normaliseEndpointPath('/v1/models?limit=1')).toEqual({ ok: true, path: '/v1/models', query: 'limit=1' });
    expect(normaliseEndpointPath('/v1/models?')).toEqual({ ok: true, path: '/v1/models', query: '' });
  });

  it.each([
    ['', /empty/],
    ['v1/chat/completions', /absolute/],
    ['//evil.example/v1/chat/completions', /absolute/],
    ['/%2e%2e/etc', /"\.\." segment/],
    ['/%2E%2E/etc', /"\.\." segment/],
    ['/.%2e/etc', /"\.\." segment/],
    ['/v1/chat/completions/../../admin', /"\.\." segment/],
    ['/v1/chat%2fcompletions', /%2F/],
    ['/v1/chat%2Fcompletions', /%2F/],
    ['/v1/chat%5ccompletions', /%5C/],
    ['/v1/chat/completions%00', /%00/],
    ['/v1/chat/completions%3fx=1', /%3F/],
    ['/v1/chat/completions%23x', /%23/],
    ['/%252e%252e/etc', /%25/],
    ['/v1/chat/completions%c3%a9', /%C3/],
    ['/v1/chat/completions%2', /malformed/],
    ['/v1/chat/completions%zz', /malformed/],
    ['/v1\\chat\\completions', /characters/],
    ['/v1/chat/completions\u0000', /characters/],
    ['/v1/chat/completions\r\nx-api-key: a', /characters/],
    ['/v1/chat completions', /characters/],
    ['/v1/chat/completions#frag', /characters/],
    ['/v1/chät/completions', /characters/],
    ['/' + 'a'.repeat(3000), /longer/],
  ])('refuses %j', (raw, reason) => {
    const out = normaliseEndpointPath(raw);
    expect(out.ok).toBe(false);
    expect(out.ok ? '' : out.reason).toMatch(reason);
  });

  it('refuses what is not a string', () => {
    expect(normaliseEndpointPath(undefined).ok).toBe(false);
    expect(normaliseEndpointPath(42).ok).toBe(false);
  });
});

describe('checkEndpoint', () => {
  it('allows every inference endpoint when no list was advertised, under its canonical spelling', () => {
    for (const path of RELAYABLE_ENDPOINTS.keys()) expect(checkEndpoint(path, undefined)).toEqual({ ok: true, path });
    expect(checkEndpoint('/v1/./%63hat/completions', undefined)).toEqual({ ok: true, path: '/v1/chat/completions' });
  });

  it('allows only the advertised endpoints when a list was advertised', () => {
    expect(checkEndpoint('/v1/chat/completions', ['/v1/chat/completions'])).toEqual({ ok: true, path: '/v1/chat/completions' });
    const out = checkEndpoint('/v1/embeddings', ['/v1/chat/completions']);
    expect(out).toEqual({ ok: false, reason: '/v1/embeddings is not an inference endpoint this worker advertised' });
  });

  it.each(['/v1/load_lora_adapter', '/api/pull', '/sleep', '/v1/models', '/v1/chat/completions/', '/V1/chat/completions', '/v1//chat/completions'])(
    'refuses %s, which is no inference endpoint (even if a hostile list "advertised" it)',
    (path) => {
      expect(checkEndpoint(path, undefined).ok).toBe(false);
      expect(checkEndpoint(path, [path]).ok).toBe(false);
    },
  );

  it('refuses a query string on the inference endpoints, which take none', () => {
    for (const path of RELAYABLE_ENDPOINTS.keys()) {
      expect(checkEndpoint(`${path}?lora_path=/etc`, undefined)).toEqual({ ok: false, reason: `${path} takes no query string` });
      expect(checkEndpoint(`${path}?`, undefined).ok).toBe(false);
    }
  });
});
