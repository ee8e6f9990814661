import { LabelBudget, OVERFLOW_LABEL } from './label-budget';
import { MetricsService } from './metrics.service';

describe('LabelBudget', () => {
  it('keeps the first values and folds the rest into one overflow value', () => {
    const budget = new LabelBudget(2);
    expect(['a', 'b', 'a', 'c', 'b', 'd'].map((v) => budget.label(v))).toEqual(['a', 'b', 'a', OVERFLOW_LABEL, 'b', OVERFLOW_LABEL]);
  });

  it('bounds the series client-chosen model names can create in /metrics', async () => {
    const metrics = new MetricsService();
    for (let i = 0; i < 2000; i++) {
      metrics.requestFinished({ provider: 'p', model: `random-${i}`, endpoint: '/v1/chat/completions', status: 200 }, 0.1);
      metrics.tokens('p', `random-${i}`, `tenant-${i}`, 'prompt', 1);
    }
    const text = await metrics.registry.metrics();
    const requestSeries = text.split('\n').filter((l) => l.startsWith('switchboard_requests_total{'));
    expect(requestSeries.length).toBeLessThanOrEqual(501);
    expect(text).toContain(`model="${OVERFLOW_LABEL}"`);
    const tokenSeries = text.split('\n').filter((l) => l.startsWith('switchboard_tokens_total{'));
    expect(tokenSeries.length).toBeLessThanOrEqual(501);
  });
});
