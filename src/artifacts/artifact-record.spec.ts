import { artifactId, ArtifactIdentity, canonicalRecord, newRecord } from './artifact-record';
import { sha256Hex } from '../common/canonical-json';

const PLAN: ArtifactIdentity = {
  kind: 'plan',
  sessionId: 'sess-1',
  tags: ['v1', 'agent:planner'],
  parents: [],
  metadata: { title: 'Refactor' },
  content: { steps: ['split', 'test'], owner: { name: 'ada', team: 'core' } },
};

describe('artifact ids', () => {
  it('are the SHA-256 of the documented canonical record', () => {
    expect(canonicalRecord(PLAN)).toBe(
      '{"content":{"owner":{"name":"ada","team":"core"},"steps":["split","test"]},"kind":"plan","metadata":{"title":"Refactor"},"parents":[],"session_id":"sess-1","tags":["agent:planner","v1"]}',
    );
    expect(artifactId(PLAN)).toBe(sha256Hex(canonicalRecord(PLAN)));
    expect(artifactId(PLAN)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('are stable: the same artifact always has the same id', () => {
    expect(artifactId(structuredClone(PLAN))).toBe(artifactId(PLAN));
    // A fixed point, so a change to the computation cannot pass unnoticed.
    expect(artifactId({ kind: 'note', sessionId: null, tags: [], parents: [], metadata: {}, content: 'hi' })).toBe(
      sha256Hex('{"content":"hi","kind":"note","metadata":{},"parents":[],"session_id":null,"tags":[]}'),
    );
  });

  it('do not depend on key order anywhere, nor on the order or repetition of tags and parents', () => {
    const reordered: ArtifactIdentity = JSON.parse(
      '{"content":{"owner":{"team":"core","name":"ada"},"steps":["split","test"]},"metadata":{"title":"Refactor"},"parents":[],"tags":["agent:planner","v1","v1"],"sessionId":"sess-1","kind":"plan"}',
    );
    expect(artifactId(reordered)).toBe(artifactId(PLAN));
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    expect(artifactId({ ...PLAN, parents: [b, a] })).toBe(artifactId({ ...PLAN, parents: [a, b, a] }));
  });

  it('change with anything that is part of the record: tags, parents, kind, session, metadata, content', () => {
    const base = artifactId(PLAN);
    const variants: ArtifactIdentity[] = [
      { ...PLAN, tags: [...PLAN.tags, 'v2'] },
      { ...PLAN, tags: ['v1'] },
      { ...PLAN, parents: ['c'.repeat(64)] },
      { ...PLAN, kind: 'summary' },
      { ...PLAN, sessionId: null },
      { ...PLAN, sessionId: 'sess-2' },
      { ...PLAN, metadata: { title: 'Refactor!' } },
      { ...PLAN, content: { steps: ['test', 'split'], owner: { name: 'ada', team: 'core' } } },
    ];
    const ids = variants.map(artifactId);
    expect(ids).not.toContain(base);
    expect(new Set(ids).size).toBe(variants.length);
  });

  it('newRecord keeps the tenant and the time out of the id, and counts the canonical content bytes', () => {
    const one = newRecord(PLAN, { tenant: 'team-a', jobId: null, createdAt: 1 });
    const other = newRecord(PLAN, { tenant: 'team-b', jobId: null, createdAt: 2 });
    expect(one.id).toBe(other.id);
    expect(one.id).toBe(artifactId(PLAN));
    expect(one.tags).toEqual(['agent:planner', 'v1']);
    expect(one.size).toBe(Buffer.byteLength('{"owner":{"name":"ada","team":"core"},"steps":["split","test"]}'));
    expect(newRecord({ ...PLAN, content: 'é' }, { tenant: 't', jobId: null, createdAt: 0 }).size).toBe(4);
  });
});
