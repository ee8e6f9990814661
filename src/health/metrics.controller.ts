import { Controller, Get, Res } from '@nestjs/common';
import { PrometheusController } from '@willsoto/nestjs-prometheus';
import type { FastifyReply } from 'fastify';
import { Registry } from 'prom-client';
import { ApiDoc } from '../openapi/api-doc';
import { OBSERVABILITY_API } from './health.schemas';

/**
 * GET /metrics (path set by PrometheusModule.register). Serves this app's registry rather than
 * prom-client's global one that the stock controller reads.
 */
@Controller()
export class MetricsController extends PrometheusController {
  constructor(private readonly registry: Registry) {
    super();
  }

  @Get()
  @ApiDoc(OBSERVABILITY_API.metrics)
  override async index(@Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    reply.header('Content-Type', this.registry.contentType);
    return this.registry.metrics();
  }
}
