import type { WorkerSnapshot } from '../fleet/worker-snapshot';
import { runnerFacts } from './runner-facts';

const w = (runner?: { type: string; version?: string }, doc?: Record<string, unknown>) => ({ runner, runnerCapabilities: doc }) as unknown as WorkerSnapshot;

/** The runner spec's GET /v1/capabilities example, as a worker relays it. */
const SEED_DOC = {
  runnerType: 'vllm-0.6.0',
  resources: {
    gpuIds: [0],
    gpuMemoryTotalMB: 81920,
    gpuMemoryUsedMB: 58000,
    gpuMemoryFreeMB: 23920,
    gpuUtilization: 0.67,
    kvCacheSizeMB: 12000,
    kvCacheUtilization: 0.45,
  },
  capabilities: { streaming: true, prefixCaching: true, multiTenant: true, visionInput: false, audioInput: false, functionCalling: true },
};

describe('runnerFacts (/v1/capabilities per pool)', () => {
  it('one engine and version, the flags and the resources of the seed document', () => {
    expect(runnerFacts([w({ type: 'vllm', version: '0.6.0' }, { ...SEED_DOC, samplerProfileVersion: 'sp-3' })], 8192)).toEqual({
      engine: 'vllm',
      engine_version: '0.6.0',
      sampler_profile_version: 'sp-3',
      max_tokens_out: 8192,
      prefixCaching: true,
      multiTenant: true,
      audioInput: false,
      resources: {
        gpuMemoryTotalMB: 81920,
        gpuMemoryUsedMB: 58000,
        gpuMemoryFreeMB: 23920,
        kvCacheSizeMB: 12000,
        kvCacheUtilization: 0.45,
        reporting_workers: 1,
      },
    });
  });

  it('lists values when the workers differ, sums resources, weights KV utilisation by size, and a flag is true only when all say so', () => {
    const other = {
      max_tokens_out: 4096,
      resources: { gpuMemoryTotalMB: 24000, gpuMemoryUsedMB: 20000, gpuMemoryFreeMB: 4000, kvCacheSizeMB: 4000, kvCacheUtilization: 0.85 },
      capabilities: { prefixCaching: false, multiTenant: true },
    };
    const facts = runnerFacts(
      [w({ type: 'vllm', version: '0.6.0' }, SEED_DOC), w({ type: 'vllm', version: '0.9.1' }, other), w({ type: 'llama-server' })],
      32768,
    );
    expect(facts).toEqual({
      engine: ['llama-server', 'vllm'],
      engine_version: ['0.6.0', '0.9.1'],
      max_tokens_out: 4096, // a runner reported it: not the context
      prefixCaching: false,
      multiTenant: true,
      audioInput: false,
      resources: {
        gpuMemoryTotalMB: 105920,
        gpuMemoryUsedMB: 78000,
        gpuMemoryFreeMB: 27920,
        kvCacheSizeMB: 16000,
        kvCacheUtilization: 0.55, // (0.45 × 12000 + 0.85 × 4000) / 16000
        reporting_workers: 2,
      },
    });
  });

  it('says nothing it does not know', () => {
    expect(runnerFacts([w(), w(undefined, { runnerType: 'tgi-2.0', resources: 'x', capabilities: { prefixCaching: 'yes' } })], 0)).toEqual({
      engine: 'tgi-2.0',
    });
    expect(runnerFacts([], 0)).toEqual({});
  });
});
