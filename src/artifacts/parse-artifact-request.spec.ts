import { GatewayError } from '../common/gateway-error';
import { encodeCursor, MAX_DEPTH, parseListParams, parseNewArtifact } from './parse-artifact-request';

const ok = (body: unknown) => parseNewArtifact(JSON.stringify(body), 1024 * 1024);
const refused = (result: unknown) => {
  expect(result).toBeInstanceOf(GatewayError);
  const e = result as GatewayError;
  return { code: e.code, param: e.details.param };
};

describe('parseNewArtifact', () => {
  it('takes kind and content, with session, tags, parents and metadata optional', () => {
    expect(ok({ kind: 'plan', content: { a: 1 } })).toEqual({ kind: 'plan', content: { a: 1 }, sessionId: null, tags: [], parents: [], metadata: {} });
    const parent = 'f'.repeat(64);
    expect(ok({ kind: 'diff', content: 'x', session_id: 's-1', tags: ['a', 'b'], parents: [parent], metadata: { m: true } })).toEqual({
      kind: 'diff',
      content: 'x',
      sessionId: 's-1',
      tags: ['a', 'b'],
      parents: [parent],
      metadata: { m: true },
    });
  });

  it("takes lineage as 'parent' (one id or a list) as well as 'parents', joined once each", () => {
    const [a, b, c] = ['a', 'b', 'c'].map((x) => x.repeat(64));
    expect(ok({ kind: 'plan', content: 1, parent: a })).toMatchObject({ parents: [a] });
    expect(ok({ kind: 'plan', content: 1, parent: [a, b] })).toMatchObject({ parents: [a, b] });
    expect(ok({ kind: 'plan', content: 1, parents: [a, b], parent: [b, c] })).toMatchObject({ parents: [a, b, c] });
    expect(ok({ kind: 'plan', content: 1, parent: null })).toMatchObject({ parents: [] });
    expect(refused(ok({ kind: 'plan', content: 1, parent: 'abc' }))).toEqual({ code: 'invalid_params', param: 'parent' });
    expect(refused(ok({ kind: 'plan', content: 1, parent: 5 }))).toEqual({ code: 'invalid_params', param: 'parent' });
    expect(refused(ok({ kind: 'plan', content: 1, parent: [a, 'x'] }))).toEqual({ code: 'invalid_params', param: 'parent[1]' });
    const many = Array.from({ length: 40 }, (_, i) => i.toString(16).padStart(64, '0'));
    expect(refused(ok({ kind: 'plan', content: 1, parents: many.slice(0, 20), parent: many.slice(20) })).code).toBe('invalid_params');
  });

  it('is a 413 above the limit, before parsing', () => {
    expect(refused(parseNewArtifact(`{"kind":"plan","content":"${'x'.repeat(2000)}"}`, 1024))).toEqual({ code: 'payload_too_large', param: undefined });
    expect(refused(parseNewArtifact(`{${'x'.repeat(2000)}`, 1024)).code).toBe('payload_too_large');
  });

  it('answers what is not JSON or not an object with invalid_request', () => {
    expect(refused(parseNewArtifact('{nope', 1024)).code).toBe('invalid_request');
    expect(refused(parseNewArtifact('[1]', 1024)).code).toBe('invalid_request');
    expect(refused(parseNewArtifact(undefined, 1024)).code).toBe('invalid_request');
  });

  it('names the field at fault', () => {
    expect(refused(ok({ content: 1 }))).toEqual({ code: 'invalid_params', param: 'kind' });
    expect(refused(ok({ kind: 'Plan!', content: 1 }))).toEqual({ code: 'invalid_params', param: 'kind' });
    expect(refused(ok({ kind: 'job', content: 1 }))).toEqual({ code: 'invalid_params', param: 'kind' });
    expect(refused(ok({ kind: 'plan' }))).toEqual({ code: 'invalid_params', param: 'content' });
    expect(refused(ok({ kind: 'plan', content: null }))).toEqual({ code: 'invalid_params', param: 'content' });
    expect(refused(ok({ kind: 'plan', content: 1, session_id: 5 }))).toEqual({ code: 'invalid_params', param: 'session_id' });
    expect(refused(ok({ kind: 'plan', content: 1, tags: 'a' }))).toEqual({ code: 'invalid_params', param: 'tags' });
    expect(refused(ok({ kind: 'plan', content: 1, tags: ['a', 'b c'] }))).toEqual({ code: 'invalid_params', param: 'tags[1]' });
    expect(refused(ok({ kind: 'plan', content: 1, tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }))).toEqual({ code: 'invalid_params', param: 'tags' });
    expect(refused(ok({ kind: 'plan', content: 1, parents: ['abc'] }))).toEqual({ code: 'invalid_params', param: 'parents[0]' });
    expect(refused(ok({ kind: 'plan', content: 1, metadata: [1] }))).toEqual({ code: 'invalid_params', param: 'metadata' });
    expect(refused(ok({ kind: 'plan', content: 1, job_id: 'x' }))).toEqual({ code: 'invalid_params', param: 'job_id' });
  });

  it(`refuses content nested deeper than ${MAX_DEPTH} levels rather than recursing into it`, () => {
    const deep = `{"kind":"plan","content":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    expect(refused(parseNewArtifact(deep, 1024 * 1024))).toEqual({ code: 'invalid_params', param: 'content' });
    const fine = `{"kind":"plan","content":${'['.repeat(MAX_DEPTH)}${']'.repeat(MAX_DEPTH)}}`;
    expect(parseNewArtifact(fine, 1024 * 1024)).not.toBeInstanceOf(GatewayError);
  });
});

describe('parseListParams', () => {
  it('defaults to 20 per page and reads the filters', () => {
    expect(parseListParams({})).toEqual({ limit: 20 });
    expect(parseListParams({ session_id: 's', tag: 'a:b', kind: 'job', limit: '5' })).toEqual({ sessionId: 's', tag: 'a:b', kind: 'job', limit: 5 });
  });

  it('round-trips its own cursors and refuses others', () => {
    const position = { createdAt: 1_700_000_000_123, id: 'e'.repeat(64) };
    expect(parseListParams({ cursor: encodeCursor(position) })).toEqual({ limit: 20, after: position });
    expect(refused(parseListParams({ cursor: 'bm9wZQ' }))).toEqual({ code: 'invalid_params', param: 'cursor' });
  });

  it('names the parameter at fault', () => {
    expect(refused(parseListParams({ limit: '0' }))).toEqual({ code: 'invalid_params', param: 'limit' });
    expect(refused(parseListParams({ limit: '101' }))).toEqual({ code: 'invalid_params', param: 'limit' });
    expect(refused(parseListParams({ limit: '1.5' }))).toEqual({ code: 'invalid_params', param: 'limit' });
    expect(refused(parseListParams({ tag: ['a', 'b'] }))).toEqual({ code: 'invalid_params', param: 'tag' });
    expect(refused(parseListParams({ tags: 'a' }))).toEqual({ code: 'invalid_params', param: 'tags' });
    expect(refused(parseListParams({ kind: 'JOB' }))).toEqual({ code: 'invalid_params', param: 'kind' });
  });
});
