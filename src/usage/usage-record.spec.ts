import { RelayRequest, ResponseSink } from '../dispatch/relay-request';
import { Provider } from '../providers/providers.service';
import { WorkerSnapshot } from '../fleet/worker-snapshot';
import { extractRequirements } from '../routing/requirements';
import { usageRecordOf, utcDay } from './usage-record';

const T0 = Date.UTC(2025, 2, 14, 23, 59, 59, 500);

function request(overrides: { model?: string; keyId?: string; tenant?: string } = {}): RelayRequest {
  const req = new RelayRequest({
    id: 'r-1',
    model: overrides.model ?? 'gpt-4',
    endpointPath: '/v1/chat/completions',
    isStreaming: false,
    body: JSON.stringify({ model: 'gpt-4', messages: [{ role: 'user', content: 'a secret prompt' }] }),
    headers: { authorization: 'Bearer sk-secret' },
    correlationId: 'c-1',
    tenant: overrides.tenant ?? 'team-a',
    keyId: overrides.keyId,
    priority: 1,
    sink: {} as ResponseSink,
    route: { model: overrides.model ?? 'gpt-4', requirements: extractRequirements('/v1/chat/completions', {}) },
  });
  req.receivedAt = T0;
  return req;
}

describe('usageRecordOf', () => {
  it('describes a served request: models, provider, worker, tokens and timings', () => {
    const req = request({ keyId: 'key-7' });
    req.provider = { name: 'gpu', costPerGpuHour: 3.6, gpusPerWorker: 2 } as Provider;
    req.targetModel = 'llama-3-70b';
    req.worker = { id: 'w-1', name: 'gpu-box-1', maxConcurrent: 4 } as WorkerSnapshot;
    req.assignedAt = T0 + 200;
    req.waitedMs = 120;
    req.firstByteAt = T0 + 400;
    req.tokenCounts = { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 };

    expect(usageRecordOf(req, 200, T0 + 2000)).toEqual({
      id: 'r-1',
      receivedAt: T0,
      day: '2025-03-14',
      tenant: 'team-a',
      keyId: 'key-7',
      requestedModel: 'gpt-4',
      servedModel: 'llama-3-70b',
      provider: 'gpu',
      workerId: 'w-1',
      workerName: 'gpu-box-1',
      endpoint: '/v1/chat/completions',
      status: 200,
      errorCode: null,
      promptTokens: 12,
      completionTokens: 30,
      queueWaitMs: 120,
      ttfbMs: 400,
      durationMs: 2000,
      // Placement to completion; a slot of 4 on a 2-GPU worker is half a GPU; 3.6 per GPU-hour.
      workerMs: 1800,
      backendMs: null,
      gpuMs: 900,
      cost: expect.closeTo(0.0009, 12),
    });
  });

  it('charges GPU time without a price when the pool sets none, one GPU per worker by default', () => {
    const req = request();
    req.provider = { name: 'cpu' } as Provider;
    req.worker = { id: 'w-2', name: 'box', maxConcurrent: 2 } as WorkerSnapshot;
    req.assignedAt = T0 + 100;
    expect(usageRecordOf(req, 200, T0 + 1100)).toMatchObject({ workerMs: 1000, gpuMs: 500, cost: null });
  });

  it("carries the backend's own time when its worker reported it (gpu_time_ms), else null", () => {
    const req = request();
    req.provider = { name: 'cpu' } as Provider;
    req.worker = { id: 'w-2', name: 'box', maxConcurrent: 1 } as WorkerSnapshot;
    req.assignedAt = T0 + 100;
    expect(usageRecordOf(req, 200, T0 + 1100).backendMs).toBeNull();
    req.backendMs = 640.4;
    expect(usageRecordOf(req, 200, T0 + 1100)).toMatchObject({ workerMs: 1000, backendMs: 640 });
  });

  it('describes a request refused before routing: no provider, model, worker, tokens or first byte', () => {
    const req = request();
    req.errorCode = 'model_not_found';
    expect(usageRecordOf(req, 404, T0 + 3)).toMatchObject({
      keyId: null,
      servedModel: null,
      provider: null,
      workerId: null,
      workerName: null,
      status: 404,
      errorCode: 'model_not_found',
      workerMs: null,
      gpuMs: null,
      cost: null,
      promptTokens: null,
      completionTokens: null,
      queueWaitMs: 0,
      ttfbMs: null,
      durationMs: 3,
    });
  });

  it('counts the current wait of a request that ends while queued', () => {
    const req = request();
    req.waitedMs = 100;
    req.queuedAt = T0 + 500;
    expect(usageRecordOf(req, 499, T0 + 800).queueWaitMs).toBe(400);
  });

  it('never carries the body, headers or anything derived from them', () => {
    const text = JSON.stringify(usageRecordOf(request(), 200, T0 + 1));
    expect(text).not.toContain('secret');
  });

  it('fits client-chosen strings to their columns', () => {
    const record = usageRecordOf(request({ model: `${'m'.repeat(254)}\u{1F600}tail` }), 404, T0);
    expect(record.requestedModel).toBe('m'.repeat(254));
    expect(usageRecordOf(request({ model: 'a\u0000b' }), 404, T0).requestedModel).toBe('ab');
  });

  it('ignores token counts that are not whole non-negative numbers', () => {
    const req = request();
    req.tokenCounts = { prompt_tokens: -1, completion_tokens: 2.5 };
    expect(usageRecordOf(req, 200, T0)).toMatchObject({ promptTokens: null, completionTokens: null });
  });
});

describe('utcDay', () => {
  it('is the UTC calendar day', () => {
    expect(utcDay(Date.UTC(2025, 11, 31, 23, 59, 59, 999))).toBe('2025-12-31');
    expect(utcDay(Date.UTC(2026, 0, 1))).toBe('2026-01-01');
    expect(utcDay(Date.UTC(2026, 0, 1, 12))).toBe('2026-01-01');
    expect(utcDay(Date.UTC(2025, 11, 31, 12))).toBe('2025-12-31'); // going back a day too
    expect(utcDay(Date.UTC(1969, 11, 31, 23))).toBe('1969-12-31');
  });
});
