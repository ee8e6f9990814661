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
      metrics.requestFinished({ provider: 'p', model: `random-${i}`, endpoint: '/v1/chat/completions', status: 200, tenant: 't' }, 0.1);
      metrics.tokens('p', `random-${i}`, `tenant-${i}`, 'prompt', 1);
    }
    const text = await metrics.registry.metrics();
    const requestSeries = text.split('\n').filter((l) => l.startsWith('switchboard_requests_total{'));
    expect(requestSeries.length).toBeLessThanOrEqual(501);
    expect(text).toContain(`model="${OVERFLOW_LABEL}"`);
    const tokenSeries = text.split('\n').filter((l) => l.startsWith('switchboard_tokens_total{'));
    expect(tokenSeries.length).toBeLessThanOrEqual(501);
  });

  it('bounds the series client-chosen tenant ids can create on requests_total and rate_limited_total', async () => {
    const metrics = new MetricsService();
    for (let i = 0; i < 1000; i++) {
      metrics.requestFinished({ provider: 'p', model: 'm', endpoint: '/v1/chat/completions', status: 200, tenant: `tenant-${i}` }, 0.1);
      metrics.rateLimited(`tenant-${i}`, 'requests');
    }
    const text = await metrics.registry.metrics();
    const requestSeries = text.split('\n').filter((l) => l.startsWith('switchboard_requests_total{'));
    expect(requestSeries.length).toBeLessThanOrEqual(201);
    expect(requestSeries.some((l) => l.includes(`tenant="${OVERFLOW_LABEL}"`))).toBe(true);
    const limitedSeries = text.split('\n').filter((l) => l.startsWith('switchboard_rate_limited_total{'));
    expect(limitedSeries.length).toBeLessThanOrEqual(201);
  });
});
