import { Controller, Get, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { CLOCK, Clock } from '../common/clock';
import { APP_CONFIG, AppConfig } from '../config';
import { GatewayError } from '../common/gateway-error';
import type { AccessLogFields } from '../observability/access-log';
import { ApiDoc } from '../common/api-doc';
import { TASKS_API } from './tasks-operations.schemas';
import type { ClientIdentity } from '../tenancy/client-identity';
import { RemoteTasks, TaskCall } from './remote-tasks';
import { serveTaskStream } from './task-stream';
import { TasksService } from './tasks.service';

/**
 * Asynchronous tasks (control-data-plane spec §2, §3): submit, stream, status, cancel. See docs/tasks.md.
 * In cluster mode a task held by another replica is read, streamed and cancelled through it (RemoteTasks).
 */
@Controller('v1/tasks')
export class TasksController {
  constructor(
    private readonly tasks: TasksService,
    private readonly apiKeys: ApiKeysService,
    private readonly remote: RemoteTasks,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /** 202 with the task's place in line, or the refusal naming the check that failed. */
  @Post()
  @ApiDoc(TASKS_API.submit)
  async submit(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const identity = this.identify(req);
    const answer = await this.tasks.submit({ identity, headers: req.headers, correlationId: req.correlationId }, req.body);
    const task = answer.task;
    (req as FastifyRequest & AccessLogFields).accessLogFields = () => ({
      tenant: identity.tenant,
      task_id: task?.id,
      model: task?.request.model,
      pool: task?.pool,
      queue_position: task ? Math.max(0, task.queuePosition) : undefined,
      predicted_start_ms: task?.predictedStartMs,
    });
    reply.code(answer.status).headers(answer.headers).header('content-type', 'application/json').send(JSON.stringify(answer.body));
  }

  @Get(':id')
  @ApiDoc(TASKS_API.status)
  async status(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string): Promise<void> {
    const identity = this.identify(req);
    const view = this.tasks.status(identity, id);
    if (view instanceof GatewayError) return this.elsewhere('status', identity, id, view, req, reply);
    reply.code(200).send(view);
  }

  /** 200 with the task's final status; cancelling a finished task changes nothing. */
  @Post(':id/cancel')
  @ApiDoc(TASKS_API.cancel)
  async cancel(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string): Promise<void> {
    const identity = this.identify(req);
    const view = this.tasks.cancel(identity, id);
    if (view instanceof GatewayError) return this.elsewhere('cancel', identity, id, view, req, reply);
    reply.code(200).send(view);
  }

  /** The task's events from the start, or after `Last-Event-ID`; ends after `end` or `error`. */
  @Get(':id/stream')
  @ApiDoc(TASKS_API.stream)
  async stream(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string): Promise<void> {
    const identity = this.identify(req);
    const task = this.tasks.find(identity, id);
    if (task instanceof GatewayError) return this.elsewhere('stream', identity, id, task, req, reply);
    serveTaskStream(this.tasks, task, req, reply, { clock: this.clock, timeoutMs: this.config.slowClientTimeoutMs });
  }

  /** A task this replica does not hold: relayed to the replica that does (cluster mode), else `notHere`. */
  private async elsewhere(
    call: TaskCall,
    identity: ClientIdentity,
    id: string,
    notHere: GatewayError,
    req: FastifyRequest,
    reply: FastifyReply,
  ): Promise<void> {
    if (!this.remote.enabled) throw notHere;
    const owner = await this.remote.locate(identity, id);
    if (owner instanceof GatewayError) throw owner;
    await this.remote.forward(owner, call, identity, id, req, reply);
  }

  private identify(req: FastifyRequest): ClientIdentity {
    const identity = this.apiKeys.identify(req);
    if (identity instanceof GatewayError) throw identity;
    return identity;
  }
}
