import { HttpException } from '@nestjs/common';
import { Errors } from '../common/gateway-error';
import { bodyObject, errorOutcome, MAX_SUMMARY_CHARS, redact, reloadSummary, summaryOf } from './admin-audit-row';

describe('admin audit rows', () => {
  it('redacts every secret-named field at any depth, keeping that it was given', () => {
    expect(
      redact({
        name: 'p',
        secret: 'x',
        nested: { api_key: 'k', token: 't', password: 'p', keyHash: 'h', rpm: 1 },
        list: [{ client_secret: 'c' }],
        key: 'sk-1',
      }),
    ).toEqual({
      name: 'p',
      secret: '[redacted]',
      nested: { api_key: '[redacted]', token: '[redacted]', password: '[redacted]', keyHash: '[redacted]', rpm: 1 },
      list: [{ client_secret: '[redacted]' }],
      key: '[redacted]',
    });
  });

  it('reads a JSON text body, and nothing else', () => {
    expect(bodyObject('{"a":1}')).toEqual({ a: 1 });
    expect(bodyObject({ a: 1 })).toEqual({ a: 1 });
    expect(bodyObject('not json')).toBeUndefined();
    expect(bodyObject('[1]')).toBeUndefined();
    expect(bodyObject(undefined)).toBeUndefined();
  });

  it('a summary is null when empty and cut down to field names when large', () => {
    expect(summaryOf(undefined)).toBeNull();
    expect(summaryOf({})).toBeNull();
    expect(summaryOf({ models: ['x'.repeat(MAX_SUMMARY_CHARS)], secret: 's' })).toEqual({ fields: ['models', 'secret'], truncated: true });
  });

  it('a reload is summarised by what changed and what needs a restart', () => {
    expect(reloadSummary({ reloaded: true, config_file: '/x', changes: { providers: { added: ['a'] } }, restart_required: [], warnings: [] })).toEqual({
      changes: { providers: { added: ['a'] } },
      restart_required: [],
    });
  });

  it('an error becomes its status, code and message', () => {
    expect(errorOutcome(Errors.conflict('taken'))).toEqual({ status: 409, code: 'conflict', message: 'taken' });
    expect(errorOutcome(new HttpException('nope', 413))).toMatchObject({ status: 413, code: 'http_413' });
    expect(errorOutcome(new Error('boom: secret detail'))).toEqual({ status: 500, code: 'internal_error', message: 'Internal error' });
  });
});
