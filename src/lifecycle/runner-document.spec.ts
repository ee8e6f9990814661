import { gpuMemoryFreeMB, knownModels, loadedModelMemoryMB } from './runner-document';

describe("a worker's relayed runner capabilities document", () => {
  const spec = {
    models: {
      loaded: [{ id: 'meta-llama/Llama-3.1-70B-Instruct', gpuMemoryMB: 24000 }],
      loading: [{ id: 'mistralai/Mistral-7B-Instruct-v0.3', progress: 0.45 }],
      available: ['meta-llama/Llama-3.1-8B-Instruct', { id: 'deepseek-ai/deepseek-r1-distill-llama-70b' }],
    },
    resources: { gpuMemoryFreeMB: 23920 },
  };

  it('knows the available and loaded models, and the free GPU memory', () => {
    expect([...knownModels(spec)!].sort()).toEqual([
      'deepseek-ai/deepseek-r1-distill-llama-70b',
      'meta-llama/Llama-3.1-70B-Instruct',
      'meta-llama/Llama-3.1-8B-Instruct',
    ]);
    expect(gpuMemoryFreeMB(spec)).toBe(23920);
    expect(loadedModelMemoryMB(spec, 'meta-llama/Llama-3.1-70B-Instruct')).toBe(24000);
    expect(loadedModelMemoryMB(spec, 'meta-llama/Llama-3.1-8B-Instruct')).toBeUndefined();
  });

  it('says nothing rather than guess when the document lacks or garbles a section', () => {
    for (const doc of [undefined, {}, { models: { loaded: [] } }, { models: 'all' }, { models: { available: 'x' } }])
      expect(knownModels(doc as never)).toBeUndefined();
    for (const doc of [undefined, { resources: {} }, { resources: { gpuMemoryFreeMB: '100' } }, { resources: { gpuMemoryFreeMB: -1 } }, { resources: [1] }])
      expect(gpuMemoryFreeMB(doc as never)).toBeUndefined();
    expect(loadedModelMemoryMB({ models: { loaded: [null, { id: 'm', gpuMemoryMB: 'big' }] } }, 'm')).toBeUndefined();
  });
});
