import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { AdminRole } from '../auth/admin-role';
import { AdminGuard } from '../auth/admin.guard';
import { ConfigReloadService, ReloadRejected, ReloadResult } from '../config/config-reload.service';
import { rejectedWithProblems } from './pool-reload';
import { Audited } from '../governance/audited';
import { reloadSummary } from '../governance/admin-audit-row';
import { ApiDoc } from '../common/api-doc';
import { CONTROL_PLANE_API } from './control-plane.schemas';

/**
 * `POST /admin/reload` (admin token): re-reads CONFIG_FILE and applies providers, routing and
 * tenants all at once, like SIGHUP. See docs/configuration.md#reloading.
 */
@Controller('admin')
@UseGuards(AdminGuard)
export class ReloadController {
  constructor(private readonly reloads: ConfigReloadService) {}

  /** 200 with what changed (and what needs a restart), or 400 naming every problem of the file. */
  @Post('reload')
  @AdminRole('operator')
  @Audited('config.reload', { target: () => 'config', summary: ({ result }) => reloadSummary(result) })
  @ApiDoc(CONTROL_PLANE_API.reload)
  @HttpCode(200)
  async reload(): Promise<ReloadResult> {
    try {
      return await this.reloads.reload('POST /admin/reload');
    } catch (e) {
      if (e instanceof ReloadRejected) throw rejectedWithProblems('Configuration', e.problems);
      throw e;
    }
  }
}
