import { SpanKind } from '@opentelemetry/api';
import { FakeClock } from '../../../test/support/fake-clock';
import type { AppConfig } from '../../config';
import type { WorkerSnapshot } from '../../fleet/worker-snapshot';
import { Tracing } from '../../telemetry/tracing.service';
import { RelayRequest, ResponseSink } from '../relay-request';
import { RequestObservers } from './request-observers';
import { TraceObserver } from './trace.observer';

const config = (tracesEndpoint: string | undefined) => ({ instanceId: 'gw-test', telemetry: { tracesEndpoint, captureContent: false } }) as AppConfig;

function request(): RelayRequest {
  return new RelayRequest({
    id: 'r-1',
    model: 'm',
    endpointPath: '/v1/chat/completions',
    isStreaming: false,
    body: '{"model":"m","max_tokens":12}',
    headers: {},
    correlationId: 'c-1',
    tenant: 't',
    priority: 1,
    sink: {} as ResponseSink,
    route: { model: 'm', requirements: {} as never },
  });
}

describe('TraceObserver', () => {
  it('is not registered while tracing is off: no span object is made, no header is added', () => {
    const tracing = new Tracing(config(undefined));
    expect(tracing.enabled).toBe(false);
    const start = jest.spyOn(tracing, 'start');
    const observers = new RequestObservers(
      {} as never,
      { finished: () => undefined } as never,
      { finished: () => undefined } as never,
      {} as never,
      new TraceObserver(tracing, new FakeClock()),
    );
    const req = request();
    observers.submitted(req, 1);
    observers.placed(req, { id: 'w', name: 'w', provider: 'p', maxConcurrent: 1 } as WorkerSnapshot, 2);
    expect(start).not.toHaveBeenCalled();
    expect(req.headers).toEqual({});
  });

  it('while on, makes a server span per request and passes its context to the worker', async () => {
    const tracing = new Tracing(config('http://127.0.0.1:9/v1/traces'));
    expect(tracing.enabled).toBe(true);
    const start = jest.spyOn(tracing, 'start');
    const observer = new TraceObserver(tracing, new FakeClock());
    const req = request();
    req.receivedAt = 1000;
    observer.submitted(req, 1000);
    req.provider = { name: 'p' } as never;
    observer.placed(req, { id: 'w', name: 'w', provider: 'p', maxConcurrent: 1 } as WorkerSnapshot, 1000);
    expect(start.mock.calls.map((c) => [c[0], c[1]])).toEqual([['chat m', SpanKind.SERVER]]);
    expect(req.headers?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    await tracing.onApplicationShutdown();
  });
});
