import { hostname } from 'node:os';
import { resolveAdvertiseUrl } from './advertise-url';

const bound = { address: '0.0.0.0', family: 'IPv4', port: 43123 };

describe('resolveAdvertiseUrl', () => {
  it('uses CLUSTER_ADVERTISE_URL as given (without a trailing slash)', () => {
    expect(resolveAdvertiseUrl({ advertiseUrl: 'https://gw-1.internal:8443/', listenHost: '0.0.0.0', tls: false, bound })).toBe('https://gw-1.internal:8443');
  });

  it('else the internal listener, else the public one with the port it really got', () => {
    expect(resolveAdvertiseUrl({ listenAddr: '10.0.0.5:9090', listenHost: '0.0.0.0', tls: true, bound })).toBe('http://10.0.0.5:9090');
    expect(resolveAdvertiseUrl({ listenHost: '127.0.0.1', tls: false, bound })).toBe('http://127.0.0.1:43123');
    expect(resolveAdvertiseUrl({ listenHost: '::1', tls: true, bound })).toBe('https://[::1]:43123');
  });

  it('names a listener on every address by the host name, and waits for a bound port', () => {
    expect(resolveAdvertiseUrl({ listenHost: '0.0.0.0', tls: false, bound })).toBe(`http://${hostname()}:43123`);
    expect(resolveAdvertiseUrl({ listenHost: '0.0.0.0', tls: false, bound: null })).toBeUndefined();
  });
});
