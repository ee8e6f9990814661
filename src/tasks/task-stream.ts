import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../common/clock';
import { Errors, GatewayError } from '../common/gateway-error';
import { SseWriter } from './sse-writer';
import type { Task } from './task';
import type { TasksService } from './tasks.service';

/**
 * `GET …/stream` of a task held here (the public route, and the internal one another replica
 * relays): the events from the start or after `Last-Event-ID`, until `end` or `error`.
 */
export function serveTaskStream(tasks: TasksService, task: Task, req: FastifyRequest, reply: FastifyReply, options: { clock: Clock; timeoutMs: number }): void {
  const afterId = lastEventId(req.headers['last-event-id'], task.events.lastId);
  if (afterId instanceof GatewayError) throw afterId;
  const busy = tasks.mayOpenStream(task);
  if (busy) throw busy;
  const preset: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) preset[name] = String(value);
  reply.hijack();
  const writer = new SseWriter(reply.raw, options);
  writer.open(req.correlationId, preset);
  writer.onClose(() => task.detach(writer));
  tasks.attach(task, writer, afterId);
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
