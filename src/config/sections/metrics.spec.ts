import { loadConfig } from '../load-config';

describe('METRICS_PORT and ENABLE_METRICS (issue 22)', () => {
  it('default: /metrics on the client port, enabled', () => {
    const config = loadConfig({});
    expect(config.metricsPort).toBeUndefined();
    expect(config.metricsEnabled).toBe(true);
  });

  it('reads a port (0 = any free port) and the off switch', () => {
    expect(loadConfig({ METRICS_PORT: '9100' }).metricsPort).toBe(9100);
    expect(loadConfig({ METRICS_PORT: '0' }).metricsPort).toBe(0);
    expect(loadConfig({ ENABLE_METRICS: 'false' }).metricsEnabled).toBe(false);
  });

  it('refuses a value that is not a port', () => {
    for (const bad of ['70000', 'abc', '-1', '9100x']) expect(() => loadConfig({ METRICS_PORT: bad })).toThrow(/METRICS_PORT must be a port number/);
  });
});
