import { runnerFigures } from './runner-figures';

const MB = 1024 * 1024;

describe('runnerFigures (runner documents → GPU memory and KV cache gauges)', () => {
  it("reads the seed's resources: one series for its GPU ids, KV cache utilisation", () => {
    const doc = { resources: { gpuIds: [0], gpuMemoryTotalMB: 81920, gpuMemoryUsedMB: 58000, gpuMemoryFreeMB: 23920, kvCacheUtilization: 0.45 } };
    expect(runnerFigures('gpu', 'w1', doc)).toEqual({ pool: 'gpu', worker: 'w1', gpus: [{ gpu: '0', usedBytes: 58000 * MB }], kvCacheUsage: 0.45 });
    expect(runnerFigures('gpu', 'w1', { resources: { gpuIds: [0, 1], gpuMemoryUsedMB: 1 } })!.gpus).toEqual([{ gpu: '0,1', usedBytes: MB }]);
    expect(runnerFigures('gpu', 'w1', { resources: { gpuMemoryUsedMB: 1 } })!.gpus).toEqual([{ gpu: 'all', usedBytes: MB }]);
  });

  it('prefers per-GPU entries, and ignores what is not a figure', () => {
    const doc = {
      resources: {
        gpuMemoryUsedMB: 3,
        gpus: [
          { id: 0, gpuMemoryUsedMB: 1 },
          { id: 1, gpuMemoryUsedMB: 2 },
          { id: 'x y', gpuMemoryUsedMB: 9 },
        ],
      },
    };
    expect(runnerFigures('p', 'w', doc)!.gpus).toEqual([
      { gpu: '0', usedBytes: MB },
      { gpu: '1', usedBytes: 2 * MB },
    ]);
    expect(runnerFigures('p', 'w', { resources: { kvCacheUtilization: 7 } })).toEqual({ pool: 'p', worker: 'w', gpus: [], kvCacheUsage: 1 });
    expect(runnerFigures('p', 'w', { resources: { gpuMemoryUsedMB: -1, kvCacheUtilization: 'high' } })).toBeUndefined();
    expect(runnerFigures('p', 'w', { queue: { depth: 1 } })).toBeUndefined();
  });
});
