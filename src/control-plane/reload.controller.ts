import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { AdminRole } from '../auth/admin-role';
import { AdminGuard } from '../auth/admin.guard';
import { ConfigReloadService, ReloadRejected, ReloadResult } from '../config/config-reload.service';
import { rejectedWithProblems } from './pool-reload';
import { Audited } from '../governance/audited';
import { reloadSummary } from '../governance/admin-audit-row';
import { ApiDoc } from '../common/api-doc';
import { CONTROL_PLANE_API } from './control-plane.schemas';
import { CordonSync } from './cordon-sync';

/**
 * `POST /admin/reload` (admin token): re-reads CONFIG_FILE and applies providers, routing and
 * tenants all at once, like SIGHUP; in cluster mode every replica reloads. See docs/configuration.md#reloading.
 */
@Controller('admin')
@UseGuards(AdminGuard)
export class ReloadController {
  constructor(
    private readonly reloads: ConfigReloadService,
    private readonly sync: CordonSync,
  ) {}

  /** 200 with what changed (and what needs a restart), or 400 naming every problem of the file. */
  @Post('reload')
  @AdminRole('operator')
  @Audited('config.reload', { target: () => 'config', summary: ({ result }) => reloadSummary(result) })
  @ApiDoc(CONTROL_PLANE_API.reload)
  @HttpCode(200)
  async reload(): Promise<ReloadResult> {
    try {
      const result = await this.reloads.reload('POST /admin/reload');
      // Cluster mode: every other replica reloads too (each from its own file and environment).
      this.sync.reloaded('POST /admin/reload');
      return result;
    } catch (e) {
      if (e instanceof ReloadRejected) throw rejectedWithProblems('Configuration', e.problems);
      throw e;
    }
  }
}
