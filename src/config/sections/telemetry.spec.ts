import { readTelemetryConfig } from './telemetry';

describe('telemetry configuration', () => {
  it('refuses an endpoint that is not a URL at load time (not at boot), without showing its credentials', () => {
    const problems: string[] = [];
    readTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://user:s3cret@[::1' }, undefined, problems);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/must be an http\(s\) URL/);
    expect(problems[0]).not.toContain('s3cret');
    const fine: string[] = [];
    expect(readTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, undefined, fine).tracesEndpoint).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(fine).toEqual([]);
  });
});
