import { Controller, Get, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { CLOCK, Clock } from '../common/clock';
import { APP_CONFIG, AppConfig } from '../config';
import { Errors, GatewayError } from '../common/gateway-error';
import type { AccessLogFields } from '../observability/access-log';
import { ApiDoc } from '../common/api-doc';
import { TASKS_API } from './tasks-operations.schemas';
import type { ClientIdentity } from '../tenancy/client-identity';
import { SseWriter } from './sse-writer';
import { TasksService } from './tasks.service';

/** Asynchronous tasks (control-data-plane spec §2, §3): submit, stream, status, cancel. See docs/tasks.md. */
@Controller('v1/tasks')
export class TasksController {
  constructor(
    private readonly tasks: TasksService,
    private readonly apiKeys: ApiKeysService,
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
  status(@Req() req: FastifyRequest, @Param('id') id: string) {
    return orThrow(this.tasks.status(this.identify(req), id));
  }

  /** 200 with the task's final status; cancelling a finished task changes nothing. */
  @Post(':id/cancel')
  @ApiDoc(TASKS_API.cancel)
  @HttpCode(200)
  cancel(@Req() req: FastifyRequest, @Param('id') id: string) {
    return orThrow(this.tasks.cancel(this.identify(req), id));
  }

  /** The task's events from the start, or after `Last-Event-ID`; ends after `end` or `error`. */
  @Get(':id/stream')
  @ApiDoc(TASKS_API.stream)
  stream(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id') id: string): void {
    const task = orThrow(this.tasks.find(this.identify(req), id));
    const afterId = orThrow(lastEventId(req.headers['last-event-id'], task.events.lastId));
    const busy = this.tasks.mayOpenStream(task);
    if (busy) throw busy;
    const preset: Record<string, string> = {};
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) preset[name] = String(value);
    reply.hijack();
    const writer = new SseWriter(reply.raw, { clock: this.clock, timeoutMs: this.config.slowClientTimeoutMs });
    writer.open(req.correlationId, preset);
    writer.onClose(() => task.detach(writer));
    this.tasks.attach(task, writer, afterId);
  }

  private identify(req: FastifyRequest): ClientIdentity {
    return orThrow(this.apiKeys.identify(req));
  }
}

function orThrow<T>(value: T | GatewayError): T {
  if (value instanceof GatewayError) throw value;
  return value;
}

/**
 * `Last-Event-ID`: the id of the last event the reader has (0 or absent = none). An id the task
 * never sent (one of an earlier task with the same id, say) is refused: resuming after it would
 * silently skip events.
 */
function lastEventId(header: string | string[] | undefined, lastId: number): number | GatewayError {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (value === undefined || value === '') return 0;
  if (!/^\d{1,15}$/.test(value)) return Errors.invalidParams('Last-Event-ID must be the id of an event of this task (a non-negative integer)', 'Last-Event-ID');
  const id = Number(value);
  if (id > lastId) return Errors.invalidParams(`Last-Event-ID ${id} is not an event of this task: its last event so far is ${lastId}`, 'Last-Event-ID');
  return id;
}
