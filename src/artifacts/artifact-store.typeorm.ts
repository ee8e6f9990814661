import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, EntityMetadata, EntityTarget, In, ObjectLiteral, Repository } from 'typeorm';
import { ArtifactRecord, ArtifactWrite, JsonObject } from './artifact-record';
import { canonicalJson } from '../common/canonical-json';
import { ArtifactEntity } from './artifact.entity';
import { ArtifactTagEntity } from './artifact-tag.entity';
import { ArtifactTranscriptEntity } from './artifact-transcript.entity';
import { ArtifactListQuery, ArtifactStore, ArtifactSummary } from './artifact-store';

/** Rows per INSERT: at most 4 × 1 000 bound parameters, under SQLite's and PostgreSQL's limits. */
const ROWS_PER_INSERT = 1000;

@Injectable()
export class TypeOrmArtifactStore extends ArtifactStore {
  /** Artifacts deleted per retention statement, and statements per `deleteCreatedBefore` call. */
  protected readonly chunkSize: number = 5_000;
  protected readonly maxChunks: number = 20;

  constructor(@InjectRepository(ArtifactEntity) private readonly repo: Repository<ArtifactEntity>) {
    super();
  }

  async save(write: ArtifactWrite): Promise<boolean> {
    return this.repo.manager.transaction(async (m) => {
      const created = await this.insertIgnoring(m, ArtifactEntity, [toRow(write.record)], 'id');
      if (created.length === 0) return false;
      await this.insertDependents(m, [write]);
      return true;
    });
  }

  async saveMany(writes: ArtifactWrite[]): Promise<void> {
    if (writes.length === 0) return;
    await this.repo.manager.transaction(async (m) => {
      for (let i = 0; i < writes.length; i += ROWS_PER_INSERT) {
        await this.insertIgnoring(
          m,
          ArtifactEntity,
          writes.slice(i, i + ROWS_PER_INSERT).map((w) => toRow(w.record)),
        );
      }
      // Tags and transcripts of artifacts that existed are identical (same id, same content): skipped alike.
      await this.insertDependents(m, writes);
    });
  }

  async find(tenant: string, id: string): Promise<ArtifactRecord | null> {
    const row = await this.repo.findOneBy({ tenant, id });
    return row ? { ...toSummary(row), content: JSON.parse(row.content) as unknown } : null;
  }

  async findTranscript(tenant: string, id: string): Promise<string | null> {
    const row = await this.repo.manager.findOneBy(ArtifactTranscriptEntity, { tenant, artifactId: id });
    return row?.body ?? null;
  }

  async list(q: ArtifactListQuery): Promise<ArtifactSummary[]> {
    const columns = this.repo.metadata.columns.filter((c) => c.propertyName !== 'content').map((c) => `a.${c.propertyName}`);
    const qb = this.repo.createQueryBuilder('a').select(columns).where('a.tenant = :tenant', { tenant: q.tenant });
    if (q.sessionId !== undefined) qb.andWhere('a.sessionId = :sessionId', { sessionId: q.sessionId });
    if (q.kind !== undefined) qb.andWhere('a.kind = :kind', { kind: q.kind });
    if (q.tag !== undefined) {
      const tagged = this.repo.manager
        .createQueryBuilder(ArtifactTagEntity, 't')
        .select('1')
        .where('t.tenant = a.tenant AND t.artifact_id = a.id AND t.tag = :tag');
      qb.andWhere(`EXISTS (${tagged.getQuery()})`, { tag: q.tag });
    }
    if (q.after) {
      qb.andWhere('(a.createdAt < :afterAt OR (a.createdAt = :afterAt AND a.id < :afterId))', { afterAt: q.after.createdAt, afterId: q.after.id });
    }
    const rows = await qb.orderBy('a.createdAt', 'DESC').addOrderBy('a.id', 'DESC').limit(q.limit).getMany();
    return rows.map(toSummary);
  }

  async storedBytes(tenant: string): Promise<number> {
    const row = await this.repo
      .createQueryBuilder('a')
      .select('COALESCE(SUM(a.size), 0)', 'bytes')
      .where('a.tenant = :tenant', { tenant })
      .getRawOne<{ bytes: string | number }>();
    return Number(row?.bytes ?? 0);
  }

  async existing(tenant: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.repo.find({ select: { id: true }, where: { tenant, id: In(ids) } });
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Chunk by chunk, each in one transaction: the `created_at` of the chunk's newest artifact
   * bounds the delete in all three tables (ties at that instant go with the chunk, so each chunk
   * makes progress). Portable, unlike `DELETE … LIMIT`.
   */
  async deleteCreatedBefore(cutoff: number): Promise<number> {
    let total = 0;
    for (let chunk = 0; chunk < this.maxChunks; chunk++) {
      const last = await this.repo
        .createQueryBuilder('a')
        .select('a.createdAt', 'createdAt')
        .where('a.createdAt < :cutoff', { cutoff })
        .orderBy('a.createdAt', 'ASC')
        .offset(this.chunkSize - 1)
        .limit(1)
        .getRawOne<{ createdAt: string | number }>();
      const [op, bound] = last ? ['<=', Number(last.createdAt)] : ['<', cutoff];
      const deleted = await this.repo.manager.transaction(async (m) => {
        for (const entity of [ArtifactTagEntity, ArtifactTranscriptEntity]) {
          await m.createQueryBuilder().delete().from(entity).where(`created_at ${op} :bound`, { bound }).execute();
        }
        const result = await m.createQueryBuilder().delete().from(ArtifactEntity).where(`created_at ${op} :bound`, { bound }).execute();
        return result.affected ?? 0;
      });
      total += deleted;
      if (!last) break;
    }
    return total;
  }

  private async insertDependents(m: EntityManager, writes: ArtifactWrite[]): Promise<void> {
    const tags = writes.flatMap(({ record: r }) => r.tags.map((tag) => ({ tenant: r.tenant, artifactId: r.id, tag, createdAt: r.createdAt })));
    for (let i = 0; i < tags.length; i += ROWS_PER_INSERT) await this.insertIgnoring(m, ArtifactTagEntity, tags.slice(i, i + ROWS_PER_INSERT));
    const transcripts = writes
      .filter((w) => w.transcript)
      .map(({ record: r, transcript }) => ({ tenant: r.tenant, artifactId: r.id, body: transcript!.text, createdAt: r.createdAt }));
    // One per statement: each may be megabytes.
    for (const t of transcripts) await this.insertIgnoring(m, ArtifactTranscriptEntity, [t]);
  }

  /**
   * `INSERT … ON CONFLICT (primary key) DO NOTHING`, optionally `RETURNING` a column: the rows
   * returned are the ones inserted (both SQLite and PostgreSQL support it). Columns and the table
   * come from the entity metadata.
   */
  private async insertIgnoring(m: EntityManager, entity: EntityTarget<ObjectLiteral>, rows: object[], returning?: string): Promise<unknown[]> {
    if (rows.length === 0) return [];
    const meta: EntityMetadata = m.connection.getMetadata(entity);
    const driver = m.connection.driver;
    const positional = driver.options.type === 'postgres';
    const params: unknown[] = [];
    const tuples = rows.map((row) => {
      const marks = meta.columns.map((c) => {
        const value = c.getEntityValue(row);
        params.push(value === undefined ? null : value);
        return positional ? `$${params.length}` : '?';
      });
      return `(${marks.join(', ')})`;
    });
    const table = meta.tablePath
      .split('.')
      .map((part) => driver.escape(part))
      .join('.');
    const names = meta.columns.map((c) => driver.escape(c.databaseName)).join(', ');
    const key = meta.primaryColumns.map((c) => driver.escape(c.databaseName)).join(', ');
    const tail = returning ? ` RETURNING ${driver.escape(returning)}` : '';
    const result: unknown = await m.query(`INSERT INTO ${table} (${names}) VALUES ${tuples.join(', ')} ON CONFLICT (${key}) DO NOTHING${tail}`, params);
    return Array.isArray(result) ? result : [];
  }
}

function toRow(r: ArtifactRecord): ArtifactEntity {
  return {
    tenant: r.tenant,
    id: r.id,
    kind: r.kind,
    sessionId: r.sessionId,
    jobId: r.jobId,
    tags: JSON.stringify(r.tags),
    parents: JSON.stringify(r.parents),
    metadata: JSON.stringify(r.metadata),
    content: canonicalJson(r.content),
    size: r.size,
    createdAt: r.createdAt,
  };
}

function toSummary(row: ArtifactEntity): ArtifactSummary {
  return {
    tenant: row.tenant,
    id: row.id,
    kind: row.kind,
    sessionId: row.sessionId,
    jobId: row.jobId,
    tags: JSON.parse(row.tags) as string[],
    parents: JSON.parse(row.parents) as string[],
    metadata: JSON.parse(row.metadata) as JsonObject,
    size: row.size,
    createdAt: row.createdAt,
  };
}
