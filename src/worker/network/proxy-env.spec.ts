import { bypassesProxy, describeProxy, proxyFor, proxySettingsFromEnv } from './proxy-env';

describe('NO_PROXY matching (curl semantics)', () => {
  it.each([
    // [no_proxy, host, port, bypass]
    ['*', 'gateway.example.com', 443, true],
    ['example.com', 'example.com', 443, true],
    ['example.com', 'gw.example.com', 443, true],
    ['example.com', 'notexample.com', 443, false],
    ['example.com', 'example.com.evil.org', 443, false],
    ['.example.com', 'example.com', 443, true],
    ['.example.com', 'a.b.example.com', 443, true],
    ['*.example.com', 'gw.example.com', 443, true],
    ['EXAMPLE.com', 'Gw.Example.COM', 443, true],
    ['other.org, example.com ,', 'gw.example.com', 80, true],
    ['localhost,127.0.0.1', '127.0.0.1', 8000, true],
    ['localhost', '127.0.0.1', 8000, false], // no name resolution, as in curl
    ['127.0.0.1', '127.0.0.10', 8000, false],
    ['10.0.0.0/8', '10.20.30.40', 8000, true],
    ['10.0.0.0/8', '11.0.0.1', 8000, false],
    ['192.168.1.0/24', '192.168.1.77', 80, true],
    ['::1', '[::1]', 8000, true],
    ['::1', '::1', 8000, true],
    ['fd00::/8', 'fd12:3456::1', 443, true],
    ['fd00::/8', 'fe80::1', 443, false],
    ['gateway.corp:8443', 'gateway.corp', 8443, true],
    ['gateway.corp:8443', 'gateway.corp', 443, false],
    ['[::1]:8000', '::1', 8000, true],
    ['', 'example.com', 443, false],
  ])('NO_PROXY=%j, host %s:%d → bypass %s', (noProxy, host, port, expected) => {
    expect(bypassesProxy(host, port, noProxy)).toBe(expected);
  });
});

describe('proxy selection', () => {
  const settings = { httpProxy: 'http://plain-proxy:3128/', httpsProxy: 'http://user:pw@tls-proxy:3128/', noProxy: 'internal.corp' };

  it('uses the https proxy for wss:// and https://, the http proxy for ws:// and http://', () => {
    expect(proxyFor(new URL('wss://gw.example.com/v1/worker/connect'), settings)?.host).toBe('tls-proxy:3128');
    expect(proxyFor(new URL('https://backend.example.com'), settings)?.host).toBe('tls-proxy:3128');
    expect(proxyFor(new URL('ws://gw.example.com'), settings)?.host).toBe('plain-proxy:3128');
    expect(proxyFor(new URL('http://127.0.0.1:8000'), settings)?.host).toBe('plain-proxy:3128');
  });

  it('goes direct for NO_PROXY hosts and when no proxy is set for the scheme', () => {
    expect(proxyFor(new URL('wss://gw.internal.corp'), settings)).toBeUndefined();
    expect(proxyFor(new URL('http://127.0.0.1:8000'), { httpsProxy: settings.httpsProxy })).toBeUndefined();
  });

  it('matches the default port when the URL has none', () => {
    expect(proxyFor(new URL('wss://gw.corp'), { httpsProxy: 'http://p:1/', noProxy: 'gw.corp:443' })).toBeUndefined();
    expect(proxyFor(new URL('ws://gw.corp'), { httpProxy: 'http://p:1/', noProxy: 'gw.corp:443' })?.host).toBe('p:1');
  });

  it('describes a proxy without its credentials', () => {
    expect(describeProxy(new URL(settings.httpsProxy))).toBe('http://tls-proxy:3128');
  });

  it('reads lowercase variables before uppercase ones and ignores empty values', () => {
    const { settings: s, problems } = proxySettingsFromEnv({
      http_proxy: '',
      HTTP_PROXY: 'http://upper:1',
      https_proxy: 'https://lower:2',
      HTTPS_PROXY: 'http://upper:2',
      no_proxy: 'a',
      NO_PROXY: 'b',
    });
    expect(problems).toEqual([]);
    expect(s).toEqual({ httpProxy: 'http://upper:1/', httpsProxy: 'https://lower:2/', noProxy: 'a' });
  });
});
