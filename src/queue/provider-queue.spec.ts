import { ProviderQueue } from './provider-queue';

const item = (model: string, receivedAt: number) => ({ model, receivedAt });

describe('ProviderQueue', () => {
  it('hands a worker the oldest request it can serve', () => {
    const q = new ProviderQueue<ReturnType<typeof item>>();
    const a = item('x', 1);
    const b = item('y', 2);
    const c = item('y', 3);
    [a, b, c].forEach((i) => q.push(i));
    expect(q.takeFirst((i) => i.model === 'y')).toBe(b);
    expect(q.takeFirst((i) => i.model === 'y')).toBe(c);
    expect(q.takeFirst((i) => i.model === 'y')).toBeUndefined();
    expect(q.length).toBe(1);
  });

  it('puts requeued requests back in arrival order, ahead of newer ones', () => {
    const q = new ProviderQueue<ReturnType<typeof item>>();
    const newer = item('m', 50);
    q.push(newer);
    const [first, second, third] = [item('m', 10), item('m', 20), item('m', 30)];
    // a dead worker's requests come back in arbitrary order
    q.requeue(third);
    q.requeue(first);
    q.requeue(second);
    expect(q.clear()).toEqual([first, second, third, newer]);
  });
});
