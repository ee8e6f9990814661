import { FakeClock } from '../../../../test/support/fake-clock';
import { ProgressReport, ProgressThrottle, estimateEta } from './progress';

describe('ProgressThrottle', () => {
  let clock: FakeClock;
  let sent: ProgressReport[];
  let throttle: ProgressThrottle;

  beforeEach(() => {
    clock = new FakeClock(10_000);
    sent = [];
    throttle = new ProgressThrottle((r) => sent.push(r), 1_000, clock);
  });

  afterEach(() => {
    throttle.close();
  });

  const advance = (ms: number) => clock.advance(ms);

  it('sends the first value at once, then at most one per interval: the latest value held back goes out when the interval ends', () => {
    throttle.report(0.1, 90);
    throttle.report(0.2, 80);
    throttle.report(0.3, 70);
    expect(sent).toEqual([{ progress: 0.1, etaSecs: 90 }]);
    advance(999);
    expect(sent).toHaveLength(1);
    advance(1);
    expect(sent).toEqual([
      { progress: 0.1, etaSecs: 90 },
      { progress: 0.3, etaSecs: 70 },
    ]);
    advance(5_000);
    throttle.report(0.4);
    expect(sent.at(-1)).toEqual({ progress: 0.4 });
  });

  it('reports only changes, never goes backwards and keeps values within 0–1', () => {
    throttle.report(0.5);
    advance(2_000);
    throttle.report(0.5);
    throttle.report(0.25);
    advance(2_000);
    expect(sent).toEqual([{ progress: 0.5 }]);
    throttle.report(7);
    expect(sent.at(-1)).toEqual({ progress: 1 });
    advance(2_000);
    throttle.report(Number.NaN);
    throttle.report(-3, -1);
    advance(2_000);
    expect(sent).toHaveLength(2);
  });

  it('sends nothing after close, not even a value held back by the interval', () => {
    throttle.report(0.1);
    throttle.report(0.9);
    throttle.close();
    advance(5_000);
    throttle.report(1);
    expect(sent).toEqual([{ progress: 0.1 }]);
  });
});

describe('estimateEta', () => {
  it('projects the pace so far and says nothing while it is too early to tell', () => {
    expect(estimateEta(0, 10_000, 0.25)).toBe(30);
    expect(estimateEta(0, 500, 0.5)).toBeUndefined();
    expect(estimateEta(0, 10_000, 0)).toBeUndefined();
    expect(estimateEta(0, 10_000, 1)).toBeUndefined();
  });
});
