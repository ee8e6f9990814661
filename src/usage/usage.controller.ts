import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import { AdminRole } from '../auth/admin-role';
import { AdminGuard } from '../auth/admin.guard';
import { GatewayError } from '../common/gateway-error';
import { UsageAggregates, UsageTotals } from './usage-aggregates.service';
import { parseUsageQuery, UsageGroupBy } from './usage-query';
import { ApiDoc } from '../common/api-doc';
import { USAGE_API } from './usage.schemas';
import { AdmissionQueue } from '../queue/admission-queue';

/** Operator API (bearer ADMIN_TOKEN): usage totals for chargeback. */
@Controller('admin')
@UseGuards(AdminGuard)
export class UsageController {
  constructor(
    private readonly aggregates: UsageAggregates,
    private readonly queue: AdmissionQueue,
  ) {}

  /** `GET /admin/usage?tenant=&key=&since=&until=&group_by=tenant|key|model|pool|day` (see docs/api.md). */
  @Get('usage')
  @AdminRole('viewer')
  @ApiDoc(USAGE_API.usage)
  async usage(@Query() raw: Record<string, unknown>) {
    const query = parseUsageQuery(raw ?? {});
    if (query instanceof GatewayError) throw query;
    const totals = await this.aggregates.totals(query);
    return {
      object: 'usage',
      group_by: query.groupBy ?? null,
      filters: {
        tenant: query.tenant ?? null,
        key: query.keyId ?? null,
        since: query.since === undefined ? null : new Date(query.since).toISOString(),
        until: query.until === undefined ? null : new Date(query.until).toISOString(),
      },
      data: totals.map((t) => describe(t, query.groupBy)),
      // Live, not recorded: the keys' and tenants' max_concurrent and what runs and waits under it now.
      concurrency: this.queue.caps.list({ tenant: query.tenant, key: query.keyId }),
    };
  }
}

function describe(t: UsageTotals, groupBy: UsageGroupBy | undefined) {
  return {
    ...(groupBy ? { [groupBy]: t.group ?? null } : {}),
    requests: t.requests,
    errors: t.errors,
    prompt_tokens: t.promptTokens,
    completion_tokens: t.completionTokens,
    total_tokens: t.totalTokens,
    worker_seconds: round(t.workerSeconds, 3),
    gpu_seconds: round(t.gpuSeconds, 3),
    cost: t.cost === null ? null : round(t.cost, 6),
  };
}

/** Sums of fractional shares, without the float noise of adding thousands of them. */
function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
