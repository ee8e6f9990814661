import { loadConfig } from '..';
import { readArtifactsConfig } from './artifacts';

describe('artifacts configuration', () => {
  it('has defaults: 1 MiB artifacts, 64 KiB inline transcripts, 4 MiB transcripts, 30 days, 1 GiB per tenant', () => {
    expect(loadConfig({}).artifacts).toEqual({
      maxBytes: 1048576,
      inlineTranscriptBytes: 65536,
      maxTranscriptBytes: 4194304,
      retentionMs: 30 * 86_400_000,
      flushIntervalMs: 1000,
      bufferBytes: 64 * 1048576,
      maxBytesPerTenant: 1024 * 1048576,
    });
  });

  it('reads the artifacts: section, the environment winning', () => {
    const problems: string[] = [];
    const config = readArtifactsConfig(
      { ARTIFACTS_MAX_BYTES: '2048' },
      {
        max_bytes: 4096,
        inline_transcript_bytes: 0,
        max_transcript_bytes: 2048,
        retention_days: 0,
        flush_interval_secs: 0.5,
        buffer_bytes: 10_000,
        max_bytes_per_tenant: 0,
      },
      problems,
    );
    expect(problems).toEqual([]);
    expect(config).toEqual({
      maxBytes: 2048,
      inlineTranscriptBytes: 0,
      maxTranscriptBytes: 2048,
      retentionMs: 0,
      flushIntervalMs: 500,
      bufferBytes: 10_000,
      maxBytesPerTenant: 0,
    });
  });

  it('names every bad or unknown key', () => {
    const problems: string[] = [];
    readArtifactsConfig(
      { ARTIFACTS_RETENTION_DAYS: '-1', ARTIFACTS_MAX_BYTES_PER_TENANT: '-5' },
      { max_bytes: 'lots', max_transcript_bytes: 10, max_byte: 1 },
      problems,
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining('artifacts.max_byte (config file) is not an artifacts setting'),
        expect.stringContaining('ARTIFACTS_RETENTION_DAYS must be'),
        expect.stringContaining('ARTIFACTS_MAX_BYTES_PER_TENANT must be'),
        expect.stringContaining('artifacts.max_bytes (config file) must be'),
        expect.stringContaining('artifacts.max_transcript_bytes (config file) must be'),
      ]),
    );
    expect(() => loadConfig({ ARTIFACTS_BUFFER_BYTES: '2000', ARTIFACTS_MAX_TRANSCRIPT_BYTES: '4000' })).toThrow(
      /ARTIFACTS_BUFFER_BYTES \(2000\) must be at least ARTIFACTS_MAX_TRANSCRIPT_BYTES/,
    );
  });
});
