import { Registry } from 'prom-client';
import { MetricFamily, parsePrometheusText, SWITCHBOARD_FAMILIES } from '../../test/observability/prometheus-text';
import { createMetricsRegistry } from './metrics-registry';
import { MetricsService } from './metrics.service';

async function scrape(registry: Registry): Promise<Map<string, MetricFamily>> {
  return parsePrometheusText(await registry.metrics());
}

function valueOf(f: MetricFamily | undefined, sampleName: string, labels: Record<string, string>): number | undefined {
  return f?.samples.find((s) => s.name === sampleName && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

describe('MetricsService', () => {
  it('declares every switchboard_* family with its type, in parseable exposition format', async () => {
    const metrics = new MetricsService(createMetricsRegistry());
    const families = await scrape(metrics.registry);
    for (const [name, type] of Object.entries(SWITCHBOARD_FAMILIES)) {
      expect({ name, type: families.get(name)?.type }).toEqual({ name, type });
      expect(families.get(name)?.help).toBeTruthy();
    }
  });

  it('includes the default process metrics in the per-app registry', async () => {
    const families = await scrape(createMetricsRegistry());
    expect(families.get('process_cpu_user_seconds_total')?.type).toBe('counter');
    expect(families.get('nodejs_heap_size_used_bytes')?.type).toBe('gauge');
    expect(families.get('nodejs_eventloop_lag_seconds')?.type).toBe('gauge');
  });

  it('can be created repeatedly in one process (one registry per app)', async () => {
    const first = new MetricsService(createMetricsRegistry());
    const second = new MetricsService(createMetricsRegistry());
    expect(() => new MetricsService()).not.toThrow();
    first.requeue('gpu');
    const a = await scrape(first.registry);
    const b = await scrape(second.registry);
    expect(valueOf(a.get('switchboard_requeues_total'), 'switchboard_requeues_total', { provider: 'gpu' })).toBe(1);
    expect(valueOf(b.get('switchboard_requeues_total'), 'switchboard_requeues_total', { provider: 'gpu' })).toBeUndefined();
  });

  it('records each relay event in the exposition', async () => {
    const m = new MetricsService();
    m.requestFinished({ provider: 'gpu', model: 'llama', endpoint: '/v1/chat/completions', status: 200, tenant: 'acme' }, 2.5);
    m.requestFinished({ provider: 'gpu', model: 'llama', endpoint: '/v1/chat/completions', status: 200, tenant: 'acme' }, 400);
    m.requestFinished({ provider: 'gpu', model: 'llama', endpoint: '/v1/chat/completions', status: 200, tenant: 'globex' }, 1);
    m.timeToFirstByte('gpu', 'llama', 0.3);
    m.setQueueDepth('gpu', 4);
    m.queueWait('gpu', 0.02);
    m.setWorkersConnected('gpu', 2);
    m.setWorkerSlots('gpu', 'busy', 3);
    m.setWorkerSlots('gpu', 'free', 1);
    m.tokens('gpu', 'llama', 'acme', 'prompt', 12);
    m.tokens('gpu', 'llama', 'acme', 'completion', 30);
    m.tokens('gpu', 'llama', 'acme', 'completion', 5);
    m.requeue('gpu');
    m.cancellation('client_disconnect');
    m.rejection('QUEUE_FULL');
    m.rejection('QUEUE_FULL');
    m.auth.workerFailure('bad_secret');
    m.rateLimited('acme', 'requests');
    m.rateLimited('acme', 'requests');
    m.rateLimited('acme', 'budget');
    m.backendCache('gpu', 'llama', { hit: true, tokensReused: 100 });
    m.backendCache('gpu', 'llama', { hit: true, tokensReused: 20 });
    m.backendCache('gpu', 'llama', { hit: false });
    m.backendCache('gpu', 'llama', {});
    m.usage.recordsWritten(5);
    m.usage.recordsDropped('buffer_full', 2);
    m.usage.collectBufferWith(() => 7);
    m.workerHeartbeatTimeout('gpu');

    const f = await scrape(m.registry);
    const gpu = { provider: 'gpu' };
    const route = { ...gpu, model: 'llama' };
    const finished = { ...route, endpoint: '/v1/chat/completions', status: '200' };
    expect(valueOf(f.get('switchboard_requests_total'), 'switchboard_requests_total', { ...finished, tenant: 'acme' })).toBe(2);
    expect(valueOf(f.get('switchboard_requests_total'), 'switchboard_requests_total', { ...finished, tenant: 'globex' })).toBe(1);
    const duration = f.get('switchboard_request_duration_seconds');
    expect(valueOf(duration, 'switchboard_request_duration_seconds_count', route)).toBe(3);
    expect(valueOf(duration, 'switchboard_request_duration_seconds_sum', route)).toBe(403.5);
    expect(valueOf(duration, 'switchboard_request_duration_seconds_bucket', { ...route, le: '5' })).toBe(2);
    expect(valueOf(duration, 'switchboard_request_duration_seconds_bucket', { ...route, le: '600' })).toBe(3);
    expect(valueOf(f.get('switchboard_time_to_first_byte_seconds'), 'switchboard_time_to_first_byte_seconds_bucket', { ...route, le: '0.5' })).toBe(1);
    expect(valueOf(f.get('switchboard_queue_depth'), 'switchboard_queue_depth', gpu)).toBe(4);
    expect(valueOf(f.get('switchboard_queue_wait_seconds'), 'switchboard_queue_wait_seconds_count', gpu)).toBe(1);
    expect(valueOf(f.get('switchboard_workers_connected'), 'switchboard_workers_connected', gpu)).toBe(2);
    expect(valueOf(f.get('switchboard_worker_slots'), 'switchboard_worker_slots', { ...gpu, state: 'busy' })).toBe(3);
    expect(valueOf(f.get('switchboard_worker_slots'), 'switchboard_worker_slots', { ...gpu, state: 'free' })).toBe(1);
    expect(valueOf(f.get('switchboard_tokens_total'), 'switchboard_tokens_total', { ...route, tenant: 'acme', kind: 'prompt' })).toBe(12);
    expect(valueOf(f.get('switchboard_tokens_total'), 'switchboard_tokens_total', { ...route, tenant: 'acme', kind: 'completion' })).toBe(35);
    expect(valueOf(f.get('switchboard_requeues_total'), 'switchboard_requeues_total', gpu)).toBe(1);
    expect(valueOf(f.get('switchboard_cancellations_total'), 'switchboard_cancellations_total', { reason: 'client_disconnect' })).toBe(1);
    expect(valueOf(f.get('switchboard_rejections_total'), 'switchboard_rejections_total', { code: 'QUEUE_FULL' })).toBe(2);
    expect(valueOf(f.get('switchboard_worker_auth_failures_total'), 'switchboard_worker_auth_failures_total', { reason: 'bad_secret' })).toBe(1);
    const limited = f.get('switchboard_rate_limited_total');
    expect(valueOf(limited, 'switchboard_rate_limited_total', { tenant: 'acme', kind: 'requests' })).toBe(2);
    expect(valueOf(limited, 'switchboard_rate_limited_total', { tenant: 'acme', kind: 'budget' })).toBe(1);
    const cache = f.get('switchboard_cache_hits_total');
    expect(valueOf(cache, 'switchboard_cache_hits_total', { ...route, result: 'hit' })).toBe(2);
    expect(valueOf(cache, 'switchboard_cache_hits_total', { ...route, result: 'miss' })).toBe(1);
    expect(valueOf(f.get('switchboard_cache_tokens_reused_total'), 'switchboard_cache_tokens_reused_total', route)).toBe(120);
    expect(valueOf(f.get('switchboard_usage_records_written_total'), 'switchboard_usage_records_written_total', {})).toBe(5);
    const dropped = f.get('switchboard_usage_records_dropped_total');
    expect(valueOf(dropped, 'switchboard_usage_records_dropped_total', { reason: 'buffer_full' })).toBe(2);
    expect(valueOf(dropped, 'switchboard_usage_records_dropped_total', { reason: 'write_failed' })).toBe(0);
    expect(valueOf(f.get('switchboard_usage_records_buffered'), 'switchboard_usage_records_buffered', {})).toBe(7);
    expect(valueOf(f.get('switchboard_worker_heartbeat_timeouts_total'), 'switchboard_worker_heartbeat_timeouts_total', gpu)).toBe(1);
  });

  it('gauges follow the latest value, down to zero', async () => {
    const m = new MetricsService();
    m.setQueueDepth('gpu', 7);
    m.setQueueDepth('gpu', 0);
    const f = await scrape(m.registry);
    expect(valueOf(f.get('switchboard_queue_depth'), 'switchboard_queue_depth', { provider: 'gpu' })).toBe(0);
  });
});

describe('parsePrometheusText', () => {
  it('rejects malformed exposition', () => {
    expect(() => parsePrometheusText('# TYPE x counter\nx{a="1" 3\n')).toThrow(/line 2/);
    expect(() => parsePrometheusText('# TYPE x counter\nx abc\n')).toThrow(/bad value/);
    expect(() => parsePrometheusText('# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\n')).toThrow(/\+Inf/);
    expect(() => parsePrometheusText('x 1')).toThrow(/newline/);
  });

  it('reads label escapes and special values', () => {
    const f = parsePrometheusText('# TYPE g gauge\ng{a="q\\"uote\\\\",b="x"} +Inf\ng NaN 1700000000000\n');
    expect(f.get('g')!.samples[0]).toEqual({ name: 'g', labels: { a: 'q"uote\\', b: 'x' }, value: Infinity });
    expect(f.get('g')!.samples[1].value).toBeNaN();
  });
});

describe('MetricsService: runner documents and the cache hit ratio (issue 22)', () => {
  it('sets switchboard_cache_hit_ratio{model} from the reported hits and misses, beside the counters', async () => {
    const metrics = new MetricsService(createMetricsRegistry());
    metrics.backendCache('gpu', 'm', { hit: true });
    metrics.backendCache('cpu', 'm', { hit: true });
    metrics.backendCache('gpu', 'm', { hit: false, tokensReused: 3 });
    metrics.backendCache('gpu', 'm', { tokensReused: 3 }); // no result: not in the ratio
    metrics.backendCache('gpu', 'other', { hit: false });
    const families = await scrape(metrics.registry);
    const ratio = families.get('switchboard_cache_hit_ratio');
    expect(ratio?.type).toBe('gauge');
    expect(valueOf(ratio, 'switchboard_cache_hit_ratio', { model: 'm' })).toBeCloseTo(2 / 3);
    expect(valueOf(ratio, 'switchboard_cache_hit_ratio', { model: 'other' })).toBe(0);
  });

  it('reads GPU memory and KV cache figures at scrape time, dropping workers that are gone', async () => {
    const metrics = new MetricsService(createMetricsRegistry());
    let figures = [
      { pool: 'gpu', worker: 'w1', gpus: [{ gpu: '0', usedBytes: 1024 }], kvCacheUsage: 0.5 },
      { pool: 'gpu', worker: 'w2', gpus: [{ gpu: '1', usedBytes: 2048 }] },
    ];
    metrics.collectRunnersWith(() => figures);
    let families = await scrape(metrics.registry);
    expect(valueOf(families.get('switchboard_gpu_memory_used_bytes'), 'switchboard_gpu_memory_used_bytes', { pool: 'gpu', worker: 'w1', gpu: '0' })).toBe(1024);
    expect(valueOf(families.get('switchboard_gpu_memory_used_bytes'), 'switchboard_gpu_memory_used_bytes', { worker: 'w2', gpu: '1' })).toBe(2048);
    expect(valueOf(families.get('switchboard_kv_cache_usage_ratio'), 'switchboard_kv_cache_usage_ratio', { pool: 'gpu', worker: 'w1' })).toBe(0.5);
    expect(families.get('switchboard_kv_cache_usage_ratio')!.samples).toHaveLength(1);
    figures = [figures[1]];
    families = await scrape(metrics.registry);
    expect(families.get('switchboard_gpu_memory_used_bytes')!.samples.map((s) => s.labels.worker)).toEqual(['w2']);
    expect(families.get('switchboard_kv_cache_usage_ratio')!.samples).toEqual([]);
  });
});
