import { Controller, Get, HttpCode, Inject, Param, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CLOCK, Clock } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { APP_CONFIG, AppConfig } from '../config';
import { InternalClusterGuard } from '../cluster/internal-cluster.guard';
import { INTERNAL_PREFIX } from '../cluster/internal-link';
import { TENANT_ID } from '../config/sections/tenancy';
import type { ClientIdentity } from '../tenancy/client-identity';
import { TASK_KEY_HEADER, TASK_TENANT_HEADER } from './remote-tasks';
import { serveTaskStream } from './task-stream';
import { TasksService } from './tasks.service';

/**
 * The task routes another replica relays to (cluster mode, the cluster secret required): the same
 * answers as `/v1/tasks/:id…` for a task held here, for the tenant the relaying replica
 * authenticated. Never relayed further: a task not held here is `404`.
 */
@ApiExcludeController()
@Controller(`${INTERNAL_PREFIX.slice(1)}/tasks`)
@UseGuards(InternalClusterGuard)
export class InternalTasksController {
  constructor(
    private readonly tasks: TasksService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  @Get(':id')
  status(@Req() req: FastifyRequest, @Param('id') id: string) {
    return orThrow(this.tasks.status(callerOf(req), id));
  }

  @Post(':id/cancel')
  @HttpCode(200)
  cancel(@Req() req: FastifyRequest, @Param('id') id: string) {
    return orThrow(this.tasks.cancel(callerOf(req), id));
  }

  @Get(':id/stream')
  stream(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string): void {
    const task = orThrow(this.tasks.find(callerOf(req), id));
    serveTaskStream(this.tasks, task, req, reply, { clock: this.clock, timeoutMs: this.config.slowClientTimeoutMs });
  }
}

/** The tenant (and key id) the relaying replica authenticated; only the tenant decides ownership, as on the public routes. */
function callerOf(req: FastifyRequest): ClientIdentity {
  const tenant = req.headers[TASK_TENANT_HEADER];
  if (typeof tenant !== 'string' || !TENANT_ID.test(tenant))
    throw Errors.invalidRequest(`${TASK_TENANT_HEADER} must name the caller's tenant`, TASK_TENANT_HEADER);
  const key = req.headers[TASK_KEY_HEADER];
  return { tenant, priority: 1, keyId: typeof key === 'string' ? key : undefined };
}

function orThrow<T>(value: T | GatewayError): T {
  if (value instanceof GatewayError) throw value;
  return value;
}
