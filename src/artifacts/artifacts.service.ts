import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLOCK, Clock } from '../common/clock';
import { Errors } from '../common/gateway-error';
import { ARTIFACT_ID_PATTERN, ArtifactRecord, JOB_KIND, JsonObject, newRecord } from './artifact-record';
import { ArtifactQuota } from './artifact-quota';
import { ArtifactStore, ArtifactSummary, ListPosition } from './artifact-store';
import { ArtifactsConfig } from '../config/sections/artifacts';
import { JobArtifactRecorder } from './job-artifact-recorder.service';
import { ArtifactListParams, encodeCursor, NewArtifact } from './parse-artifact-request';

export interface ArtifactPage {
  data: ArtifactSummary[];
  nextCursor: string | null;
}

/**
 * The artifact registry as clients see it, always within the caller's tenant: another tenant's
 * artifact is as unknown as one that does not exist. Job artifacts recorded but not written yet
 * are found by id (from the recorder's buffer); listings show them once written.
 */
@Injectable()
export class ArtifactsService {
  private readonly config: ArtifactsConfig;
  private readonly quota: ArtifactQuota;

  constructor(
    private readonly store: ArtifactStore,
    private readonly recorder: JobArtifactRecorder,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(APP_CONFIG) appConfig: AppConfig,
  ) {
    this.config = appConfig.artifacts;
    this.quota = new ArtifactQuota(this.config.maxBytesPerTenant, (tenant) => this.store.storedBytes(tenant));
  }

  /**
   * Stores a client artifact. `created` is false when the tenant already had it (same id): the
   * answer is then the stored artifact, its first `created_at` included, and nothing changes.
   * Parents must be artifacts of the same tenant; the tenant's stored bytes must leave room for it
   * (`artifacts.max_bytes_per_tenant`, else 413 `artifact_quota_exceeded`).
   */
  async create(tenant: string, body: NewArtifact): Promise<{ created: boolean; record: ArtifactRecord }> {
    const record = newRecord(body, { tenant, jobId: null, createdAt: this.clock.now() });
    if (record.size > this.config.maxBytes) throw Errors.payloadTooLarge(this.config.maxBytes);
    await this.checkParents(tenant, record.parents, body.parents);
    const release = await this.quota.reserve(tenant, record.size);
    try {
      if (await this.store.save({ record })) return { created: true, record };
    } finally {
      release();
    }
    return { created: false, record: (await this.store.find(tenant, record.id)) ?? record };
  }

  /** The artifact, with a separately stored transcript put in its content when `withTranscript`. */
  async get(tenant: string, id: string, withTranscript = false): Promise<ArtifactRecord> {
    const record = await this.find(tenant, id);
    if (!withTranscript) return record;
    const transcript = transcriptOf(record);
    if (transcript?.storage !== 'separate') return record;
    const text = await this.separateTranscript(tenant, id);
    return { ...record, content: { ...(record.content as JsonObject), transcript: { ...transcript, text } } };
  }

  /** A job artifact's SSE transcript, inline or stored apart; 404 for artifacts without one. */
  async transcript(tenant: string, id: string): Promise<string> {
    const record = await this.find(tenant, id);
    const transcript = transcriptOf(record);
    if (!transcript) throw Errors.notFound('Transcript of artifact', id);
    if (transcript.storage === 'inline') return typeof transcript.text === 'string' ? transcript.text : '';
    return this.separateTranscript(tenant, id);
  }

  async list(tenant: string, params: ArtifactListParams): Promise<ArtifactPage> {
    const rows = await this.store.list({ tenant, ...params, limit: params.limit + 1 });
    const data = rows.slice(0, params.limit);
    const last: ListPosition | undefined = rows.length > params.limit ? data[data.length - 1] : undefined;
    return { data, nextCursor: last ? encodeCursor(last) : null };
  }

  private async find(tenant: string, id: string): Promise<ArtifactRecord> {
    if (!ARTIFACT_ID_PATTERN.test(id)) throw Errors.notFound('Artifact', id);
    const record = this.recorder.pending(tenant, id)?.record ?? (await this.store.find(tenant, id));
    if (!record) throw Errors.notFound('Artifact', id);
    return record;
  }

  private async separateTranscript(tenant: string, id: string): Promise<string> {
    const text = this.recorder.pending(tenant, id)?.transcript?.text ?? (await this.store.findTranscript(tenant, id));
    if (text === null) throw Errors.notFound('Transcript of artifact', id);
    return text;
  }

  /** Every parent must be an artifact of the tenant (written, or recorded and waiting). */
  private async checkParents(tenant: string, parents: string[], asSent: string[]): Promise<void> {
    const unknown = parents.filter((p) => !this.recorder.pending(tenant, p));
    const known = await this.store.existing(tenant, unknown);
    const missing = unknown.find((p) => !known.has(p));
    if (missing !== undefined) {
      const at = asSent.indexOf(missing);
      throw Errors.invalidParams(`Unknown parent artifact '${missing}'`, `parents[${at}]`);
    }
  }
}

/** The transcript description of a job artifact's content, if it has one. */
function transcriptOf(record: ArtifactRecord): { storage: string; text?: unknown } | undefined {
  const content = record.content as JsonObject | null;
  const t = content && typeof content === 'object' ? content.transcript : undefined;
  return record.kind === JOB_KIND && t && typeof t === 'object' && typeof (t as JsonObject).storage === 'string' ? (t as { storage: string }) : undefined;
}
