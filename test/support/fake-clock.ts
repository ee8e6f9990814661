import { Clock, TimerHandle } from '../../src/common/clock';

interface FakeTimer {
  id: number;
  dueAt: number;
  /** Set for intervals: the period they are rescheduled with. */
  every?: number;
  fn: () => void;
}

/**
 * A Clock whose time only moves when a test says so. Timers fire in due order while `advance`
 * walks time forward, and `now()` inside a callback reads that timer's due time, as it would live.
 *
 *   const clock = new FakeClock();
 *   clock.setTimeout(fn, 1000);
 *   clock.advance(999);  // fn not called
 *   clock.advance(1);    // fn called
 *
 * Use `advanceAsync` when callbacks start promises that must settle before the next timer fires.
 */
export class FakeClock implements Clock {
  private current: number;
  private nextId = 1;
  private readonly timers = new Map<number, FakeTimer>();

  constructor(start = Date.UTC(2025, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    return this.add(fn, Math.max(0, ms || 0));
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    // Like Node, a period below 1 ms becomes 1 ms (and `advance` cannot loop forever).
    const every = Math.max(1, ms || 0);
    return this.add(fn, every, every);
  }

  clearTimeout(handle: TimerHandle): void {
    this.remove(handle);
  }

  clearInterval(handle: TimerHandle): void {
    this.remove(handle);
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way, in order. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (let timer = this.nextDue(target); timer; timer = this.nextDue(target)) {
      this.fire(timer);
    }
    this.current = target;
  }

  /** Like `advance`, but lets pending promise callbacks run after each timer fires. */
  async advanceAsync(ms: number): Promise<void> {
    const target = this.current + ms;
    for (let timer = this.nextDue(target); timer; timer = this.nextDue(target)) {
      this.fire(timer);
      await flushPromises();
    }
    this.current = target;
    await flushPromises();
  }

  /** Jumps to an absolute time (forward only), firing due timers like `advance`. */
  advanceTo(time: number): void {
    this.advance(Math.max(0, time - this.current));
  }

  /** Number of scheduled timeouts and intervals. */
  pendingTimers(): number {
    return this.timers.size;
  }

  private add(fn: () => void, delay: number, every?: number): TimerHandle {
    const timer: FakeTimer = { id: this.nextId++, dueAt: this.current + delay, every, fn };
    this.timers.set(timer.id, timer);
    return { fakeTimerId: timer.id } as unknown as TimerHandle;
  }

  private remove(handle: TimerHandle | undefined): void {
    const id = (handle as unknown as { fakeTimerId?: number } | undefined)?.fakeTimerId;
    if (id !== undefined) this.timers.delete(id);
  }

  /** The earliest timer due at or before `limit`; ties fire in scheduling order. */
  private nextDue(limit: number): FakeTimer | undefined {
    let next: FakeTimer | undefined;
    for (const t of this.timers.values()) {
      if (t.dueAt <= limit && (!next || t.dueAt < next.dueAt || (t.dueAt === next.dueAt && t.id < next.id))) next = t;
    }
    return next;
  }

  private fire(timer: FakeTimer): void {
    this.current = Math.max(this.current, timer.dueAt);
    if (timer.every !== undefined) timer.dueAt += timer.every;
    else this.timers.delete(timer.id);
    timer.fn();
  }
}

async function flushPromises(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
}
