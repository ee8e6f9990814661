import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { FakeClock } from '../../test/support/fake-clock';
import { SseWriter, StallLimit } from './sse-writer';
import { Task, TaskParams } from './task';

/**
 * A response over a socket that takes `highWaterMark` bytes before `write` answers false, and
 * hands them to the client only when the test says so (`drain`), as a slow reader's socket does.
 */
class SlowResponse extends EventEmitter {
  delivered = '';
  buffered = '';
  ended = false;
  writes = 0;
  private full = false;

  constructor(private readonly highWaterMark: number) {
    super();
  }

  writeHead() {
    return this;
  }

  write(text: string): boolean {
    if (this.ended) throw new Error('write after end');
    this.writes++;
    this.buffered += text;
    this.full = this.buffered.length >= this.highWaterMark;
    return !this.full;
  }

  end() {
    this.ended = true;
    return this;
  }

  /** The client reads everything buffered; the writer hears `drain` if it was told the socket was full. */
  drain(): void {
    this.delivered += this.buffered;
    this.buffered = '';
    if (this.full) {
      this.full = false;
      this.emit('drain');
    }
  }

  close(): void {
    this.emit('close');
  }

  destroyed = false;
  destroy() {
    this.destroyed = true;
    this.emit('close');
    return this;
  }
}

function newTask(): Task {
  return new Task({
    id: 't',
    tenant: 'default',
    request: { model: 'm', endpoint: '/v1/chat/completions', maxTokens: 8, params: {} } as TaskParams,
    budgetKey: 'k',
    limits: {},
    promptTokens: 0,
    correlationId: 'c',
    createdAt: 1,
    maxEvents: 1_000_000,
    maxBytes: 64 * 1024 * 1024,
  });
}

function reader(highWaterMark: number, stall?: StallLimit): { res: SlowResponse; writer: SseWriter } {
  const res = new SlowResponse(highWaterMark);
  const writer = new SseWriter(res as unknown as ServerResponse, stall);
  writer.open('c', {});
  return { res, writer };
}

const HWM = 4096;
/** A full socket buffer plus what one write may add: a frame, or one catch-up piece from the log. */
const BOUND = HWM + 16 * 1024 + 256;

describe('SseWriter: a slow reader', () => {
  it('holds at most one socket buffer; the events it has not taken wait in the shared log and arrive in order, then the stream ends', () => {
    const task = newTask();
    task.publish('started', { queue_position: 0, predicted_start_ms: 0 });
    const slow = reader(HWM);
    const fast = reader(Infinity);
    task.attach(slow.writer, 0);
    task.attach(fast.writer, 0);

    for (let i = 0; i < 3000; i++) task.publish('token', { t: `tok${i} `, i });
    // The worker's chunks keep coming as one write each: the fast reader gets them, the slow one does not grow.
    for (let c = 0; c < 20; c++)
      task.batch(() => {
        for (let i = 0; i < 50; i++) task.publish('token', { t: 'x', i: 3000 + c * 50 + i });
      });
    expect(fast.res.buffered.length).toBeGreaterThan(100_000);
    expect(slow.res.buffered.length).toBeLessThanOrEqual(BOUND);
    task.comment('keepalive');
    task.finish('completed', 'end', { tokens_out: 4000, decode_time_ms: 1, decode_ms: 1 }, 2);
    expect(fast.res.ended).toBe(true);
    expect(slow.res.ended).toBe(false); // its last events are still to come

    let rounds = 0;
    while (!slow.res.ended && rounds++ < 10_000) {
      slow.res.drain();
      expect(slow.res.buffered.length).toBeLessThanOrEqual(BOUND);
    }
    slow.res.drain();
    expect(slow.res.ended).toBe(true);
    // Every event once, in order, as the fast reader got them (the keepalive went only to the reader that was keeping up).
    expect(slow.res.delivered).toBe(task.events.transcript());
    expect(fast.res.buffered).toBe(task.events.transcript().replace(/(id: 4002\n)/, ': keepalive\n\n$1'));
  });

  it('paces a long replay (Last-Event-ID) the same way', () => {
    const task = newTask();
    for (let i = 0; i < 2000; i++) task.publish('token', { t: `tok${i}`, i });
    task.finish('completed', 'end', { tokens_out: 2000, decode_time_ms: 1, decode_ms: 1 }, 2);
    const slow = reader(HWM);
    task.attach(slow.writer, 10);
    expect(slow.res.buffered.length).toBeLessThanOrEqual(BOUND);
    expect(slow.res.ended).toBe(false);
    while (!slow.res.ended) slow.res.drain();
    slow.res.drain();
    expect(slow.res.delivered).toBe(task.events.since(10));
  });

  it('a reader that goes away while behind gets nothing more and leaves the task untouched', () => {
    const task = newTask();
    const slow = reader(HWM);
    const fast = reader(Infinity);
    task.attach(slow.writer, 0);
    task.attach(fast.writer, 0);
    slow.writer.onClose(() => task.detach(slow.writer));
    for (let i = 0; i < 500; i++) task.publish('token', { t: `tok${i}`, i });
    slow.res.close();
    const writes = slow.res.writes;
    for (let i = 500; i < 1000; i++) task.publish('token', { t: `tok${i}`, i });
    slow.res.drain();
    task.finish('completed', 'end', { tokens_out: 1000, decode_time_ms: 1, decode_ms: 1 }, 2);
    expect(slow.res.writes).toBe(writes);
    expect(slow.res.ended).toBe(false);
    expect(task.readers.size).toBe(0);
    expect(fast.res.buffered).toBe(task.events.transcript());
  });

  it('is cut off when its socket stays full for the stall limit (it would pin the log past the retention); draining in time resets the limit', () => {
    const clock = new FakeClock();
    const task = newTask();
    const slow = reader(HWM, { clock, timeoutMs: 30_000 });
    task.attach(slow.writer, 0);
    slow.writer.onClose(() => task.detach(slow.writer));
    for (let i = 0; i < 500; i++) task.publish('token', { t: `tok${i}`, i });
    clock.advance(29_999);
    slow.res.drain(); // it reads in time: still there, and behind again
    expect(slow.res.destroyed).toBe(false);
    for (let i = 500; i < 1000; i++) task.publish('token', { t: `tok${i}`, i });
    clock.advance(29_999);
    expect(slow.res.destroyed).toBe(false);
    clock.advance(1);
    expect(slow.res.destroyed).toBe(true);
    expect(task.readers.size).toBe(0);
    // A reader that keeps up is never cut off, however long the task runs.
    const steady = reader(Infinity, { clock, timeoutMs: 30_000 });
    task.attach(steady.writer, 0);
    clock.advance(120_000);
    task.publish('token', { t: 'late', i: 1000 });
    expect(steady.res.destroyed).toBe(false);
    expect(steady.res.buffered).toBe(task.events.transcript());
  });
});
