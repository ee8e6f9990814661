import { Body, Controller, Get, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import { AdminRole } from '../auth/admin-role';
import { APP_CONFIG, AppConfig } from '../config';
import { AdminGuard } from '../auth/admin.guard';
import { DrainPoolDto } from './dto/drain-pool.dto';
import { JsonBodyPipe } from '../common/json-body.pipe';
import { PoolsService } from './pools.service';
import { Audited } from '../governance/audited';
import { ApiDoc } from '../common/api-doc';
import { CONTROL_PLANE_API } from './control-plane.schemas';

const DRAIN_BODY = new JsonBodyPipe(DrainPoolDto);

/**
 * Pools (providers) on the control plane, behind the admin token: health, drain/undrain of a
 * whole pool, and reload of its declared models, aliases and capabilities. See docs/control-plane.md.
 */
@Controller('v1/pools')
@UseGuards(AdminGuard)
export class PoolsController {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly pools: PoolsService,
  ) {}

  @Get()
  @AdminRole('viewer')
  @ApiDoc(CONTROL_PLANE_API.listPools)
  list() {
    return { data: this.pools.list() };
  }

  @Get(':id/health')
  @AdminRole('viewer')
  @ApiDoc(CONTROL_PLANE_API.poolHealth)
  health(@Param('id') id: string) {
    return this.pools.health(id);
  }

  /** 202: the pool's workers drain within `deadline_ms`, and it stays cordoned until undrain. */
  @Post(':id/drain')
  @AdminRole('operator')
  @Audited('pools.drain')
  @ApiDoc(CONTROL_PLANE_API.drainPool)
  @HttpCode(202)
  drain(@Param('id') id: string, @Body() body: unknown) {
    this.pools.providerOr404(id); // an unknown pool is 404 before its body is judged
    const dto = DRAIN_BODY.transform(body);
    return this.pools.drain(id, dto.deadline_ms ?? this.config.shutdownDrainTimeoutMs, dto.reason ?? 'pool_drain');
  }

  @Post(':id/undrain')
  @AdminRole('operator')
  @Audited('pools.undrain')
  @ApiDoc(CONTROL_PLANE_API.undrainPool)
  @HttpCode(200)
  undrain(@Param('id') id: string) {
    return this.pools.undrain(id);
  }

  /** 200 `{id, models, aliases, capabilities}`: replaced all at once, or 400 listing every problem (nothing changed). */
  @Post(':id/reload')
  @AdminRole('operator')
  @Audited('pools.reload')
  @ApiDoc(CONTROL_PLANE_API.reloadPool)
  @HttpCode(200)
  reload(@Param('id') id: string, @Body() body: unknown) {
    return this.pools.reload(id, body);
  }
}
