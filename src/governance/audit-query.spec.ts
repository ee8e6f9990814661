import { GatewayError } from '../common/gateway-error';
import { parseAuditQuery } from './audit-query';

describe('GET /admin/audit query', () => {
  it('defaults to the 100 newest rows of every kind', () => {
    expect(parseAuditQuery({})).toEqual({ limit: 100 });
  });

  it('reads every filter', () => {
    expect(
      parseAuditQuery({
        operation: 'cache-flush',
        outcome: 'refused',
        model: 'llama3:8b',
        task: 'flush-1',
        actor: 'user-42',
        action: 'keys.create',
        target: 'team-a',
        since: '2026-12-01',
        until: '1796169600000',
        before: '42',
        limit: '5',
      }),
    ).toEqual({
      operation: 'cache-flush',
      outcome: 'refused',
      modelId: 'llama3:8b',
      taskId: 'flush-1',
      actor: 'user-42',
      action: 'keys.create',
      targetId: 'team-a',
      since: Date.UTC(2026, 11, 1),
      until: 1796169600000,
      before: 42,
      limit: 5,
    });
  });

  it.each([
    [{ operation: 'load' }, 'operation', "Query parameter 'operation' must be one of model-load, model-unload, cache-flush, got 'load'"],
    [{ outcome: 'ok' }, 'outcome', "Query parameter 'outcome' must be one of accepted, refused, completed, failed, got 'ok'"],
    [{ limit: '0' }, 'limit', "Query parameter 'limit' must be an integer from 1 to 1000, got '0'"],
    [{ limit: '1001' }, 'limit', "Query parameter 'limit' must be an integer from 1 to 1000, got '1001'"],
    [{ before: '-1' }, 'before', "Query parameter 'before' must be an audit row id (a positive integer), got '-1'"],
    [
      { since: 'yesterday' },
      'since',
      "Query parameter 'since' must be an ISO-8601 date or date-time (2025-01-31, 2025-01-31T12:00:00Z) or epoch milliseconds, got 'yesterday'",
    ],
    [{ since: '2026-12-02', until: '2026-12-01' }, 'since', "Query parameter 'since' must be before 'until' (since is inclusive, until exclusive)"],
    [{ operation: ['model-load', 'cache-flush'] }, 'operation', "Query parameter 'operation' must be given once"],
    [{ limit: '' }, 'limit', "Query parameter 'limit' must not be empty"],
    [{ model: 'm\u0000' }, 'model', "Query parameter 'model' must not contain a NUL character"],
    [{ task: 'load-\u0000' }, 'task', "Query parameter 'task' must not contain a NUL character"],
    [{ action: 'Keys Create' }, 'action', "Query parameter 'action' must be an action name such as keys.create or lifecycle.model-load, got 'Keys Create'"],
    [{ actor: 'u\u0000' }, 'actor', "Query parameter 'actor' must not contain a NUL character"],
    [{ target: 'x'.repeat(256) }, 'target', "Query parameter 'target' must be at most 255 characters"],
    [
      { tenant: 'a' },
      'tenant',
      "Unknown query parameter 'tenant' (known: operation, outcome, model, task, actor, action, target, since, until, before, limit)",
    ],
  ])('%j is a 400 naming %s', (raw, param, message) => {
    const q = parseAuditQuery(raw);
    expect(q).toBeInstanceOf(GatewayError);
    expect(q).toMatchObject({ code: 'invalid_request', message, details: { param } });
  });
});
