import { Module } from '@nestjs/common';
import { APP_FILTER, HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { DispatchModule } from '../dispatch/dispatch.module';
import { RoutingModule } from '../routing/routing.module';
import { TenancyModule } from '../tenancy/tenancy.module';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { DialectExceptionFilter } from './dialect-exception.filter';
import { InferenceController, RELAYED_ROUTES } from './inference.controller';
import { DirectRoute, serveDirectly } from './direct-routes';
import { InferenceService } from './inference.service';

@Module({
  imports: [DispatchModule, RoutingModule, TenancyModule, ApiKeysModule],
  controllers: [InferenceController],
  providers: [InferenceService, { provide: APP_FILTER, useClass: DialectExceptionFilter }],
})
export class InferenceModule {
  /** Runs before Nest registers the routes: Fastify then calls the relay without Nest's per-request pipeline. */
  constructor(http: HttpAdapterHost, inference: InferenceService) {
    const fastify = http.httpAdapter?.getInstance?.() as FastifyInstance | undefined;
    if (typeof fastify?.addHook !== 'function') return;
    const routes = new Map<string, DirectRoute>(
      RELAYED_ROUTES.map(({ path, method, options }) => [path, { method, handle: (req, reply) => inference.relay(req, reply, path, options) }]),
    );
    serveDirectly(fastify, InferenceController, routes);
  }
}
