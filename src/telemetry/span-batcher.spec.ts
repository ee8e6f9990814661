import { OtlpWriter, writeBodyStart } from './otlp-json';
import { BatchOptions, BatchTransport, SpanBatcher } from './span-batcher';

/** A transport that keeps each body's span names; `fail` makes the next sends reject. */
function transport(): BatchTransport & { batches: string[][]; fail: boolean; sent: Promise<void> } {
  let signal = () => {};
  const t = {
    batches: [] as string[][],
    fail: false,
    sent: new Promise<void>((r) => (signal = r)),
    send(body: Buffer): Promise<void> {
      const parsed = JSON.parse(body.toString('utf8')) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ name: string }> }> }> };
      t.batches.push(parsed.resourceSpans[0].scopeSpans[0].spans.map((s) => s.name));
      signal();
      t.sent = new Promise<void>((r) => (signal = r));
      return t.fail ? Promise.reject(new Error('collector answered 503')) : Promise.resolve();
    },
  };
  return t;
}

const span = (name: string) => ({ writeJson: (w: OtlpWriter) => w.raw('{"name":').str(name).raw('}') });
const START = (w: OtlpWriter) => writeBodyStart(w, ['service.name', 'switchboard'], 'switchboard');
/** A schedule delay no test waits for: only full batches and flushes send. */
const options = (o: Partial<BatchOptions>): BatchOptions => ({ maxQueueSize: 100, maxExportBatchSize: 100, scheduledDelayMs: 3_600_000, ...o });

describe('SpanBatcher', () => {
  it('sends a full batch without waiting for the schedule, the rest at a flush, each body valid OTLP JSON', async () => {
    const t = transport();
    const warnings: string[] = [];
    const batcher = new SpanBatcher(t, START, options({ maxExportBatchSize: 2 }), (m) => warnings.push(m));
    const sent = t.sent;
    for (const name of ['a', 'b', 'c']) batcher.ended(span(name));
    await sent;
    expect(t.batches).toEqual([['a', 'b']]);
    await batcher.shutdown();
    expect(t.batches).toEqual([['a', 'b'], ['c']]);
    batcher.ended(span('after shutdown'));
    await batcher.flush();
    expect(t.batches).toHaveLength(2);
    expect(warnings).toEqual([]);
  });

  it('keeps big and non-ASCII spans intact across a grown buffer', async () => {
    const t = transport();
    const batcher = new SpanBatcher(t, START, options({}), () => undefined);
    const big = `é€😀 ${'x'.repeat(200_000)}`;
    batcher.ended(span(big));
    batcher.ended(span('small'));
    await batcher.flush();
    expect(t.batches).toEqual([[big, 'small']]);
  });

  it('drops spans beyond the queue bound and says so', async () => {
    const t = transport();
    const warnings: string[] = [];
    const batcher = new SpanBatcher(t, START, options({ maxQueueSize: 2 }), (m) => warnings.push(m));
    for (const name of ['a', 'b', 'c']) batcher.ended(span(name));
    await batcher.flush();
    expect(t.batches).toEqual([['a', 'b']]);
    expect(warnings).toEqual([expect.stringMatching(/^1 span\(s\) lost .*queue is full/)]);
  });

  it('a failed export loses its batch with a warning; later spans still go out', async () => {
    const t = transport();
    const warnings: string[] = [];
    const batcher = new SpanBatcher(t, START, options({}), (m) => warnings.push(m));
    t.fail = true;
    batcher.ended(span('lost'));
    await batcher.flush();
    expect(warnings).toEqual([expect.stringMatching(/^1 span\(s\) lost .*collector answered 503/)]);
    t.fail = false;
    batcher.ended(span('kept'));
    await batcher.flush();
    expect(t.batches).toEqual([['lost'], ['kept']]);
  });
});
