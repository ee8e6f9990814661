import { Body, Controller, Delete, Get, Param, Put, UseGuards } from '@nestjs/common';
import { AdminRole } from '../auth/admin-role';
import { AdminGuard } from '../auth/admin.guard';
import { Errors, GatewayError } from '../common/gateway-error';
import { parseJsonObject } from './json-object';
import { parseTenantSettings, TENANT_ID, TenantSettings } from '../config/sections/tenancy';
import { TenantsService, TenantView } from './tenants.service';
import { Audited } from '../governance/audited';
import { ApiDoc } from '../common/api-doc';
import { TENANTS_API } from './tenants.schemas';

/** Operator API for tenant settings (bearer ADMIN_TOKEN); see docs/tenancy.md. */
@Controller('admin/tenants')
@UseGuards(AdminGuard)
export class TenantsController {
  constructor(private readonly tenants: TenantsService) {}

  /** Tenants with settings of their own (stored or configured), and the defaults of all others. */
  @Get()
  @AdminRole('viewer')
  @ApiDoc(TENANTS_API.listTenants)
  list() {
    return { data: this.tenants.list().map(describeTenant), defaults: settingsJson(this.tenants.defaultSettings()) };
  }

  /** The tenant's effective settings and where they come from (`admin`, `config` or `default`). */
  @Get(':id')
  @AdminRole('viewer')
  @ApiDoc(TENANTS_API.getTenant)
  get(@Param('id') id: string) {
    return describeTenant(this.tenants.describe(checkTenantId(id)));
  }

  /**
   * Replaces the tenant's settings (snake_case like the config file; absent = no limit / default),
   * stores them and applies them at once. They take precedence over the config file's entry.
   */
  @Put(':id')
  @AdminRole('admin')
  @Audited('tenants.put')
  @ApiDoc(TENANTS_API.putTenant)
  async put(@Param('id') id: string, @Body() raw: unknown) {
    checkTenantId(id);
    const problems: string[] = [];
    const settings = parseTenantSettings(parseJsonObject(raw), 'body', problems);
    if (problems.length > 0) throw Errors.invalidRequest(problems.join('; '));
    return describeTenant(await this.tenants.put(id, settings));
  }

  /** Forgets the stored settings: the config file's entry (or the defaults) applies again. */
  @Delete(':id')
  @AdminRole('admin')
  @Audited('tenants.delete')
  @ApiDoc(TENANTS_API.deleteTenant)
  async remove(@Param('id') id: string) {
    checkTenantId(id);
    if (!(await this.tenants.remove(id))) throw new GatewayError('not_found', `Tenant '${id}' has no settings stored through the admin API`);
    return { deleted: id, now: describeTenant(this.tenants.describe(id)) };
  }
}

function checkTenantId(id: string): string {
  if (!TENANT_ID.test(id)) throw Errors.invalidRequest('Tenant ids are 1-64 characters of A-Z a-z 0-9 . _ -', 'id');
  return id;
}

function describeTenant(t: TenantView) {
  return {
    id: t.id,
    source: t.source,
    settings: settingsJson(t.settings),
    ...(t.createdAt !== undefined ? { created_at: new Date(t.createdAt).toISOString() } : {}),
    ...(t.updatedAt !== undefined ? { updated_at: new Date(t.updatedAt).toISOString() } : {}),
  };
}

/** The settings as the config file and PUT bodies spell them; unset ones are null. */
function settingsJson(s: TenantSettings) {
  return {
    rpm: s.rpm ?? null,
    tpm: s.tpm ?? null,
    tokens_per_day: s.tokensPerDay ?? null,
    priority: s.priority ?? null,
    max_priority: s.maxPriority ?? null,
    max_queued: s.maxQueued ?? null,
    max_concurrent: s.maxConcurrent ?? null,
    models: s.models ?? null,
    session_tokens: s.sessionTokens ?? null,
    session_time_secs: s.sessionTimeSecs ?? null,
    pools: s.pools ?? null,
  };
}
