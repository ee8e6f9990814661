import { Module, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { DashboardAssets } from './dashboard-assets';
import { DashboardController } from './dashboard.controller';

/** The built-in live operator page at `/dashboard` (docs/dashboard.md). */
@Module({
  controllers: [DashboardController],
  providers: [DashboardAssets],
})
export class DashboardModule implements OnModuleInit {
  constructor(private readonly http: HttpAdapterHost) {}

  /**
   * `/dashboard/` (Nest routes have no trailing slash) redirects to `/dashboard`, whose relative
   * asset and API URLs resolve from the gateway's root. The Location is relative too, so a proxy
   * that serves the gateway under a path prefix keeps it.
   */
  onModuleInit(): void {
    const fastify = this.http.httpAdapter?.getInstance<FastifyInstance>();
    fastify?.get('/dashboard/', (_req, reply) => {
      reply.code(308).header('location', '../dashboard').send();
    });
  }
}
