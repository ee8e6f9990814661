import { CanActivate, ExecutionContext, Inject, Injectable, NotFoundException, UnauthorizedException } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { CLUSTER_AUTH_HEADER, clusterAuthMatches } from './internal-link';

/**
 * Guards the internal routes between replicas: 404 outside cluster mode (the routes do not exist
 * for a single gateway), 401 without the cluster secret. Never logs what was presented.
 */
@Injectable()
export class InternalClusterGuard implements CanActivate {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const { redisUrl, secret } = this.config.cluster;
    if (!redisUrl) throw new NotFoundException();
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined> }>();
    if (!clusterAuthMatches(req.headers[CLUSTER_AUTH_HEADER], secret)) throw new UnauthorizedException('cluster secret required');
    return true;
  }
}
