import { loadConfig } from '../load-config';

describe('connection settings', () => {
  it('has bounded defaults (timeouts were 0 = never before)', () => {
    expect(loadConfig({}).connections).toEqual({
      requestTimeoutMs: 60_000,
      headersTimeoutMs: 20_000,
      keepAliveTimeoutMs: 72_000,
      maxClientConnections: 10_000,
      workerRegisterFrameBytes: 65_536,
      maxWorkerFrameBytes: 104_857_600,
    });
  });

  it('reads the environment, and refuses a headers timeout above the request timeout', () => {
    const c = loadConfig({ HTTP_REQUEST_TIMEOUT_SECS: '2', HTTP_HEADERS_TIMEOUT_SECS: '1.5', MAX_CLIENT_CONNECTIONS: '0' }).connections;
    expect(c).toMatchObject({ requestTimeoutMs: 2000, headersTimeoutMs: 1500, maxClientConnections: 0 });
    expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_SECS: '2', HTTP_HEADERS_TIMEOUT_SECS: '3' })).toThrow(
      /HTTP_HEADERS_TIMEOUT_SECS must not exceed HTTP_REQUEST_TIMEOUT_SECS/,
    );
    expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_SECS: '0' })).toThrow(/HTTP_REQUEST_TIMEOUT_SECS/);
    expect(() => loadConfig({ WORKER_REGISTER_FRAME_BYTES: String(2 * 1024 * 1024), MAX_WORKER_FRAME_BYTES: String(1024 * 1024) })).toThrow(
      /WORKER_REGISTER_FRAME_BYTES must not exceed/,
    );
  });
});
