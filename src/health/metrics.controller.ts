import { Controller, Get, Inject, NotFoundException, Optional, Res } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '../config';
import { PrometheusController } from '@willsoto/nestjs-prometheus';
import type { FastifyReply } from 'fastify';
import { Registry } from 'prom-client';
import { ApiDoc } from '../common/api-doc';
import { OBSERVABILITY_API } from './health.schemas';

/**
 * GET /metrics (path set by PrometheusModule.register). Serves this app's registry rather than
 * prom-client's global one that the stock controller reads. A 404 with `ENABLE_METRICS=false`,
 * and with `METRICS_PORT` (then MetricsListener serves it on that port instead).
 */
@Controller()
export class MetricsController extends PrometheusController {
  private readonly served: boolean;

  constructor(
    private readonly registry: Registry,
    @Optional() @Inject(APP_CONFIG) config?: AppConfig,
  ) {
    super();
    this.served = !config || (config.metricsEnabled !== false && config.metricsPort === undefined);
  }

  @Get()
  @ApiDoc(OBSERVABILITY_API.metrics)
  override async index(@Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    if (!this.served) throw new NotFoundException('Cannot GET /metrics');
    reply.header('Content-Type', this.registry.contentType);
    return this.registry.metrics();
  }
}
