import { AdmissionQueue, Queueable } from './admission-queue';

const item = (targetModel: string, receivedAt: number, queueProvider = 'p'): Queueable => ({ targetModel, receivedAt, queueProvider });
const serving = (...models: string[]) => ({ wildcard: false, models: new Set(models) });
const anyModel = { wildcard: true, models: new Set<string>() };

describe('AdmissionQueue', () => {
  it('bounds each provider separately', () => {
    const q = new AdmissionQueue();
    expect(q.admit(item('m', 1, 'a'), 2)).toBe(true);
    expect(q.admit(item('n', 2, 'a'), 2)).toBe(true);
    expect(q.admit(item('m', 3, 'a'), 2)).toBe(false);
    expect(q.admit(item('m', 4, 'b'), 2)).toBe(true);
    expect([q.depth('a'), q.depth('b'), q.totalDepth()]).toEqual([2, 1, 3]);
  });

  it('hands a worker the oldest request for any of its models, skipping models it does not serve', () => {
    const q = new AdmissionQueue();
    const [x1, y2, y3, z0] = [item('x', 1), item('y', 2), item('y', 3), item('z', 0)];
    [x1, y2, y3, z0].forEach((i) => q.admit(i, 10));
    expect(q.takeFor(serving('y', 'x'), () => true)).toBe(x1);
    expect(q.takeFor(serving('y'), () => true)).toBe(y2);
    expect(q.takeFor(anyModel, () => true)).toBe(z0);
    expect(q.takeFor(serving('nothing'), () => true)).toBeUndefined();
    expect(q.totalDepth()).toBe(1);
  });

  it('skips requests the worker may not take (capabilities, pin) without losing their place', () => {
    const q = new AdmissionQueue();
    const [vision, plain] = [item('m', 1), item('m', 2)];
    q.admit(vision, 10);
    q.admit(plain, 10);
    expect(q.takeFor(serving('m'), (r) => r !== vision)).toBe(plain);
    expect(q.takeFor(serving('m'), () => true)).toBe(vision);
  });

  it('puts requeued requests back by arrival, ahead of newer ones, past the bound', () => {
    const q = new AdmissionQueue();
    const newer = item('m', 50);
    q.admit(newer, 1);
    const [first, second] = [item('m', 10), item('m', 20)];
    q.requeue(second);
    q.requeue(first);
    expect(q.depth('p')).toBe(3);
    const order = [q.takeFor(serving('m'), () => true), q.takeFor(serving('m'), () => true), q.takeFor(serving('m'), () => true)];
    expect(order).toEqual([first, second, newer]);
  });

  it('removes and discards by provider, oldest first', () => {
    const q = new AdmissionQueue();
    const [a1, b2, a3] = [item('m', 1, 'a'), item('n', 2, 'b'), item('o', 3, 'a')];
    [a3, b2, a1].forEach((i) => q.requeue(i));
    expect(q.remove(b2)).toBe(true);
    expect(q.remove(b2)).toBe(false);
    expect(q.discard('a')).toEqual([a1, a3]);
    expect(q.totalDepth()).toBe(0);
  });
});
