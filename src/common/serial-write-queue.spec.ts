import { Logger } from '@nestjs/common';
import { SerialWriteQueue } from './serial-write-queue';

function deferred() {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('SerialWriteQueue', () => {
  const log = { warn: jest.fn() } as unknown as Logger & { warn: jest.Mock };

  beforeEach(() => log.warn.mockClear());

  it('starts a write only after the previous one finished, in order', async () => {
    const queue = new SerialWriteQueue(log);
    const first = deferred();
    const order: string[] = [];
    queue.enqueue('first', async () => {
      order.push('first started');
      await first.promise;
      order.push('first done');
    });
    queue.enqueue('second', async () => {
      order.push('second started');
    });
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['first started']);
    first.resolve();
    await queue.whenIdle();
    expect(order).toEqual(['first started', 'first done', 'second started']);
  });

  it('logs a failed write and carries on with the next', async () => {
    const queue = new SerialWriteQueue(log);
    const ran: string[] = [];
    queue.enqueue('doomed', async () => {
      throw new Error('disk on fire');
    });
    queue.enqueue('next', async () => {
      ran.push('next');
    });
    await expect(queue.whenIdle()).resolves.toBeUndefined();
    expect(ran).toEqual(['next']);
    expect(log.warn).toHaveBeenCalledWith('doomed failed: disk on fire');
  });

  it('drops writes beyond its bound, warning once per overflow', async () => {
    const queue = new SerialWriteQueue(log, 2);
    const gate = deferred();
    expect(queue.enqueue('a', () => gate.promise)).toBe(true);
    expect(queue.enqueue('b', async () => undefined)).toBe(true);
    expect(queue.enqueue('c', async () => undefined)).toBe(false);
    expect(queue.enqueue('d', async () => undefined)).toBe(false);
    expect(log.warn).toHaveBeenCalledTimes(1);
    gate.resolve();
    await queue.whenIdle();
    expect(queue.size).toBe(0);
    expect(queue.enqueue('e', async () => undefined)).toBe(true);
  });

  it('whenIdle also waits for writes enqueued while waiting', async () => {
    const queue = new SerialWriteQueue(log);
    const ran: string[] = [];
    queue.enqueue('outer', async () => {
      queue.enqueue('inner', async () => {
        ran.push('inner');
      });
    });
    await queue.whenIdle();
    expect(ran).toEqual(['inner']);
  });
});
