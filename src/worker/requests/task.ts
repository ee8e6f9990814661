import { Features, RequestMessage, WorkerToServerMessage } from '../../protocol';
import { Clock } from '../clock';
import { Logger } from '../logger';
import { RelayChannel } from './channel';
import { CompleteParts, ResponseSink } from './request-runner';
import { withGpuTime } from './usage-gpu-time';

/** Frames bigger than this waiting in the socket buffer pause the backend stream. */
const SEND_HIGH_WATER_BYTES = 1 << 20;

/** One request the gateway assigned to this worker. */
export interface Task {
  request: RequestMessage;
  channel: RelayChannel;
  controller: AbortController;
  state: 'queued' | 'running';
  /** The gateway got its final answer (complete, error or 499); nothing more is sent for it. */
  settled: boolean;
  /** At least one response_chunk went out: the gateway can no longer hand the request to another worker. */
  sentChunks: boolean;
}

/** `gpuTimeMs`: the backend call's duration, sent only when the gateway accepted the `gpu_time` feature. */
export function sendComplete(channel: RelayChannel, requestId: string, parts: CompleteParts, gpuTimeMs?: number): void {
  channel.send({
    type: 'response_complete',
    request_id: requestId,
    status_code: parts.status_code,
    headers: parts.headers && Object.keys(parts.headers).length > 0 ? parts.headers : undefined,
    body: parts.body ? parts.body : undefined,
    token_counts: parts.token_counts,
    ...(gpuTimeMs !== undefined && channel.features.has(Features.GPU_TIME) ? { gpu_time_ms: Math.max(0, Math.round(gpuTimeMs)) } : {}),
  });
}

/** Turns what the runner reports for one task into wire frames on the task's link. */
export function sinkFor(task: Task, startedAt: number, clock: Clock, log: Logger): ResponseSink {
  const { channel } = task;
  const id = task.request.request_id;
  let chunks = 0;
  return {
    start: (status, headers) => {
      if (task.settled || !channel.open || !channel.features.has(Features.RESPONSE_START)) return;
      channel.send({ type: 'response_start', request_id: id, status_code: status, headers });
    },
    chunk: (text) => {
      if (task.settled || !channel.open) return;
      chunks++;
      task.sentChunks = true;
      // A gateway that accepted gpu_time also gets the GPU time in a stream's final usage (usage-gpu-time.ts).
      const out = task.request.is_streaming && channel.features.has(Features.GPU_TIME) ? withGpuTime(text, clock.now() - startedAt) : text;
      const frame: WorkerToServerMessage = { type: 'response_chunk', request_id: id, chunk: out };
      if (channel.bufferedAmount < SEND_HIGH_WATER_BYTES) {
        channel.send(frame);
        return;
      }
      // The gateway reads slower than the backend writes: wait until this frame is on the wire.
      return new Promise<void>((resolve) => {
        if (!channel.send(frame, resolve)) resolve();
      });
    },
    complete: (parts) => {
      if (task.settled) return;
      task.settled = true;
      sendComplete(channel, id, parts, clock.now() - startedAt);
      log.info('request completed', {
        request_id: id,
        model: task.request.model,
        status: parts.status_code,
        streaming: task.request.is_streaming,
        chunks: task.request.is_streaming || chunks > 0 ? chunks : undefined,
        token_counts: parts.token_counts,
        duration_ms: clock.now() - startedAt,
      });
    },
    fail: (code, message) => {
      if (task.settled) return;
      task.settled = true;
      channel.send({ type: 'error', request_id: id, code, message });
      log.warn('request failed', { request_id: id, model: task.request.model, code, error: message });
    },
  };
}
