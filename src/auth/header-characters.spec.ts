import { offendingHeader } from './header-characters';

describe('offendingHeader', () => {
  it('names the header whose value holds a control character, and the path of the request line', () => {
    expect(offendingHeader('POST /v1/messages?beta=1 HTTP/1.1\r\nhost: a\r\nX-Evil: a\u0000b\r\n\r\n')).toEqual({ path: '/v1/messages', header: 'x-evil' });
    expect(offendingHeader('GET / HTTP/1.1\r\nhost: a\r\nx-folded: a\r\n b\r\n\r\n')).toEqual({ path: '/', header: 'x-folded' });
  });

  it('finds nothing in a clean head (tabs are legal), and never echoes a name that is not a plain token', () => {
    expect(offendingHeader('GET / HTTP/1.1\r\nhost: a\r\nx-tab: a\tb\r\n\r\n')).toBeUndefined();
    expect(offendingHeader('GET / HTTP/1.1\r\n<script>: a\u0001\r\n\r\n')).toEqual({ path: '/', header: 'header' });
    // Only the first request of a pipelined buffer is looked at.
    expect(offendingHeader('GET / HTTP/1.1\r\nhost: a\r\n\r\nGET / HTTP/1.1\r\nx: \u0000\r\n\r\n')).toBeUndefined();
  });
});
