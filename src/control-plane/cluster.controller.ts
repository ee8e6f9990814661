import { Controller, Get, Inject, UseGuards } from '@nestjs/common';
import { AdminRole } from '../auth/admin-role';
import { AdminGuard } from '../auth/admin.guard';
import { ApiDoc } from '../common/api-doc';
import { APP_CONFIG, AppConfig } from '../config';
import { Membership } from '../cluster/membership.port';
import { CLUSTER_API } from './cluster.schemas';

export interface ClusterMemberView {
  id: string;
  advertise_url: string;
  started_at: string;
  last_seen: string;
  version: string;
  self: boolean;
}

export interface ClusterView {
  enabled: boolean;
  replica_id: string;
  degraded: boolean;
  replica_timeout_secs?: number;
  members: ClusterMemberView[];
}

/** `GET /admin/cluster`: the replicas as this one sees them (read only, so not audited). */
@Controller('admin')
@UseGuards(AdminGuard)
export class ClusterController {
  constructor(
    private readonly membership: Membership,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Get('cluster')
  @AdminRole('viewer')
  @ApiDoc(CLUSTER_API.cluster)
  async cluster(): Promise<ClusterView> {
    // An operator asking after a replica left wants the list as it is now, not at the last heartbeat.
    await this.membership.refresh();
    const { membership } = this;
    return {
      enabled: membership.enabled,
      replica_id: membership.replicaId,
      degraded: membership.degraded(),
      ...(membership.enabled ? { replica_timeout_secs: this.config.cluster.replicaTimeoutMs / 1000 } : {}),
      members: membership.members().map((r) => ({
        id: r.id,
        advertise_url: r.advertise_url,
        started_at: new Date(r.started_at).toISOString(),
        last_seen: new Date(r.last_seen).toISOString(),
        version: r.version,
        self: r.id === membership.replicaId,
      })),
    };
  }
}
