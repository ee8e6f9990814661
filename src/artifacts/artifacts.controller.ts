import { Controller, Get, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { Errors, GatewayError } from '../common/gateway-error';
import { APP_CONFIG, AppConfig } from '../config';
import { ApiDoc } from '../common/api-doc';
import { ARTIFACTS_API } from './artifacts.schemas';
import { JOB_KIND } from './artifact-record';
import { ArtifactSummary } from './artifact-store';
import { ArtifactsService } from './artifacts.service';
import { TenantLimits } from '../tenancy/tenant-limits.service';
import { parseListParams, parseNewArtifact } from './parse-artifact-request';

/**
 * `/v1/artifacts`: the artifact registry (control-data-plane spec §9). Client key and tenant as
 * for the inference routes; everything is scoped to the caller's tenant. Errors in the OpenAI
 * dialect. See docs/artifacts.md.
 */
@Controller('v1/artifacts')
export class ArtifactsController {
  private readonly maxBytes: number;

  constructor(
    private readonly artifacts: ArtifactsService,
    private readonly apiKeys: ApiKeysService,
    private readonly limits: TenantLimits,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.maxBytes = config.artifacts.maxBytes;
  }

  /**
   * 201 when stored, 200 when the tenant already had this artifact (same id). Charged to the
   * tenant's (and key's) request limit like an inference request, and to the tenant's stored-bytes quota.
   */
  @Post()
  @ApiDoc(ARTIFACTS_API.create)
  async create(@Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply) {
    const identity = this.apiKeys.identify(req);
    if (identity instanceof GatewayError) throw identity;
    const tenant = identity.tenant;
    const verdict = await this.limits.admit(identity);
    for (const [name, value] of Object.entries(verdict.headers)) reply.header(name, value);
    if (verdict.error) throw verdict.error;
    const body = parseNewArtifact(req.body, this.maxBytes);
    if (body instanceof GatewayError) throw body;
    const { created, record } = await this.artifacts.create(tenant, body);
    reply.status(created ? 201 : 200);
    return describe(record);
  }

  @Get()
  @ApiDoc(ARTIFACTS_API.list)
  async list(@Req() req: FastifyRequest, @Query() query: Record<string, unknown>) {
    const tenant = this.tenantOf(req);
    const params = parseListParams(query ?? {});
    if (params instanceof GatewayError) throw params;
    const page = await this.artifacts.list(tenant, params);
    return { object: 'list', data: page.data.map((a) => describe(a)), has_more: page.nextCursor !== null, next_cursor: page.nextCursor };
  }

  @Get(':id')
  @ApiDoc(ARTIFACTS_API.get)
  async get(@Req() req: FastifyRequest, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const tenant = this.tenantOf(req);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (name !== 'include') throw Errors.invalidParams(`Unknown query parameter '${name.slice(0, 64)}' (known: include)`, name);
      if (value !== 'transcript') throw Errors.invalidParams("Query parameter 'include' must be 'transcript'", name);
    }
    const record = await this.artifacts.get(tenant, id, query?.include === 'transcript');
    return { ...describe(record), content: record.content };
  }

  @Get(':id/transcript')
  @ApiDoc(ARTIFACTS_API.transcript)
  async transcript(@Req() req: FastifyRequest, @Param('id') id: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    const tenant = this.tenantOf(req);
    const text = await this.artifacts.transcript(tenant, id);
    reply.header('content-type', 'text/event-stream; charset=utf-8');
    return text;
  }

  private tenantOf(req: FastifyRequest): string {
    const identity = this.apiKeys.identify(req);
    if (identity instanceof GatewayError) throw identity;
    return identity.tenant;
  }
}

/** An artifact's metadata as the API writes it. */
function describe(a: ArtifactSummary) {
  return {
    object: 'artifact',
    id: a.id,
    kind: a.kind,
    session_id: a.sessionId,
    job_id: a.jobId,
    tags: a.tags,
    parents: a.parents,
    metadata: a.metadata,
    size: a.size,
    created_at: new Date(a.createdAt).toISOString(),
    transcript_url: a.kind === JOB_KIND ? `/v1/artifacts/${a.id}/transcript` : null,
  };
}
