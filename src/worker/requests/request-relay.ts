import { CancelMessage, RequestMessage } from '../../protocol';
import { Clock } from '../clock';
import { checkEndpoint } from '../guard/endpoint-path';
import { Logger } from '../logger';
import { RelayChannel } from './channel';
import { ErrorCodes, ResponseSink } from './request-runner';
import { Task, sendComplete, sinkFor } from './task';

const DRAINING_BODY = JSON.stringify({
  error: {
    message: 'This worker is shutting down and accepts no new requests.',
    type: 'service_unavailable',
    code: 'worker_draining',
  },
});
const AT_CAPACITY_BODY = JSON.stringify({
  error: {
    message: 'This worker is at its max_concurrency and its local queue is full.',
    type: 'service_unavailable',
    code: 'worker_at_capacity',
  },
});

/** Relays one request to the backend, reporting to the sink (`runBackendRequest` bound to a backend). */
export type RunRequest = (request: RequestMessage, signal: AbortSignal, sink: ResponseSink) => Promise<void>;

export interface RelayOptions {
  maxConcurrency: number;
  run: RunRequest;
  /** The worker is stopping: new requests are refused. */
  stopping: () => boolean;
  /** A request got its final answer or its relay ended (the daemon checks whether a stop can finish). */
  settled: () => void;
  clock: Clock;
  log: Logger;
}

/**
 * The requests the gateway assigned to this worker: at most max_concurrency run against the
 * backend, as many more wait locally; cancel, a lost link and the shutdown deadline abort them.
 */
export class RequestRelay {
  private readonly tasks = new Map<string, Task>();
  private readonly queue: Task[] = [];
  private runningCount = 0;

  constructor(private readonly options: RelayOptions) {}

  /** Requests assigned by the gateway and not yet answered (running + queued locally). */
  get load(): number {
    let load = 0;
    for (const t of this.tasks.values()) if (!t.settled) load++;
    return load;
  }

  get running(): number {
    return this.runningCount;
  }

  get queued(): number {
    return this.queue.length;
  }

  accept(channel: RelayChannel, request: RequestMessage): void {
    const { log, maxConcurrency } = this.options;
    const id = request.request_id;
    // A settled task may still be winding down (its backend call being aborted); its id is free
    // again, and start's cleanup only removes the map entry if it is still its own.
    if (this.tasks.get(id)?.settled === false) {
      log.warn('gateway sent a request id that is already in flight; refusing the duplicate', { request_id: id });
      // No request_id on purpose: a gateway fails the request an error frame names, and the
      // first copy of this request is still running fine.
      channel.send({
        type: 'error',
        code: ErrorCodes.DUPLICATE_REQUEST_ID,
        message: `request ${id} is already in flight on this worker; the duplicate was ignored, the first one continues`,
      });
      return;
    }
    const endpoint = checkEndpoint(request.endpoint_path, channel.advertisedEndpoints);
    if (!endpoint.ok) {
      // Never relayed, so BACKEND_API_KEY never goes with it: see guard/endpoint-path.ts.
      log.warn('refused a request for a path this worker does not relay', {
        request_id: id,
        path: String(request.endpoint_path).slice(0, 200),
        reason: endpoint.reason,
      });
      channel.send({ type: 'error', request_id: id, code: ErrorCodes.ENDPOINT_NOT_ALLOWED, message: `refused by the worker: ${endpoint.reason}` });
      return;
    }
    if (this.options.stopping() || channel.draining) {
      log.info('refusing request while draining', { request_id: id });
      sendComplete(channel, id, { status_code: 503, headers: { 'content-type': 'application/json' }, body: DRAINING_BODY });
      return;
    }
    // The canonical path that was checked is what goes out, not the gateway's spelling of it.
    const task: Task = {
      request: { ...request, endpoint_path: endpoint.path },
      channel,
      controller: new AbortController(),
      state: 'queued',
      settled: false,
      sentChunks: false,
    };
    if (this.runningCount < maxConcurrency) {
      this.tasks.set(id, task);
      this.start(task);
    } else if (this.queue.length < maxConcurrency) {
      // The gateway tracks our slots, so this only happens around cancels and reconnects.
      log.info('gateway assigned more than max_concurrency; queued locally', { request_id: id, queued: this.queue.length + 1 });
      this.tasks.set(id, task);
      this.queue.push(task);
    } else {
      log.warn('local queue full; answering 503', { request_id: id });
      sendComplete(channel, id, { status_code: 503, headers: { 'content-type': 'application/json' }, body: AT_CAPACITY_BODY });
    }
  }

  cancel(message: CancelMessage): void {
    const { log } = this.options;
    const task = this.tasks.get(message.request_id);
    if (!task || task.settled) {
      log.debug('cancel for a request that is not in flight', { request_id: message.request_id });
      return;
    }
    task.settled = true;
    if (task.state === 'queued') {
      this.queue.splice(this.queue.indexOf(task), 1);
      this.tasks.delete(message.request_id);
    } else {
      task.controller.abort();
    }
    // 499 (client closed request) tells the gateway the slot is free now.
    sendComplete(task.channel, message.request_id, { status_code: 499 });
    log.info('request cancelled by the gateway', { request_id: message.request_id, reason: message.reason });
    this.options.settled();
  }

  /** The link is gone: nobody can receive these answers, so stop spending GPU time on them. */
  dropAll(channel: RelayChannel): void {
    for (const [id, task] of this.tasks) {
      if (task.channel !== channel) continue;
      if (!task.settled) this.options.log.warn('connection lost with a request in flight; aborting it', { request_id: id });
      task.settled = true;
      task.controller.abort();
      if (task.state === 'queued') this.tasks.delete(id);
    }
    for (let i = this.queue.length - 1; i >= 0; i--) if (this.queue[i].channel === channel) this.queue.splice(i, 1);
  }

  /**
   * The drain deadline (or a second stop) has come: abort everything still running. A request
   * the gateway has received nothing for yet (queued here, waiting for the backend, or a stream
   * without a chunk) gets no frame at all: when the link closes the gateway requeues it on another
   * worker, whereas an `error` would fail it for the client. Only requests with chunks already
   * relayed, which cannot be retried, are reported with error{worker_shutting_down} on `channel`.
   */
  abortAll(channel: RelayChannel | undefined): void {
    const { log } = this.options;
    for (const [id, task] of this.tasks) {
      if (task.settled) continue;
      task.settled = true;
      task.controller.abort();
      if (task.state === 'queued') this.tasks.delete(id);
      if (!task.sentChunks) {
        log.warn('aborted a request with nothing relayed yet at the shutdown deadline; the gateway can requeue it', {
          request_id: id,
          state: task.state,
        });
        continue;
      }
      channel?.send({
        type: 'error',
        request_id: id,
        code: ErrorCodes.WORKER_SHUTTING_DOWN,
        message: 'worker stopped before the request finished',
      });
      log.warn('aborted in-flight request at shutdown deadline', { request_id: id });
    }
    this.queue.length = 0;
  }

  private start(task: Task): void {
    const { log, clock } = this.options;
    task.state = 'running';
    this.runningCount++;
    const { request } = task;
    const startedAt = clock.now();
    log.debug('relaying request to backend', {
      request_id: request.request_id,
      model: request.model,
      path: request.endpoint_path,
      streaming: request.is_streaming,
    });
    void this.options
      .run(request, task.controller.signal, sinkFor(task, startedAt, clock, log))
      .catch((err: unknown) => {
        // A bug, not a backend failure: fail this request instead of the whole process.
        log.error('request relay crashed', { request_id: request.request_id, error: err as Error });
        sinkFor(task, startedAt, clock, log).fail('worker_internal_error', 'the worker failed to relay this request');
      })
      .finally(() => {
        this.runningCount--;
        if (this.tasks.get(request.request_id) === task) this.tasks.delete(request.request_id);
        this.startQueued();
        this.options.settled();
      });
  }

  private startQueued(): void {
    while (this.runningCount < this.options.maxConcurrency && this.queue.length > 0) {
      const next = this.queue.shift() as Task;
      if (!next.settled) this.start(next);
    }
  }
}
