import type { Task } from './task';

export function taskUrls(id: string): { stream_url: string; status_url: string } {
  const path = `/v1/tasks/${encodeURIComponent(id)}`;
  return { stream_url: `${path}/stream`, status_url: path };
}

const iso = (ms: number) => (ms ? new Date(ms).toISOString() : null);

/** `GET /v1/tasks/:id` (and the answer of a cancel). */
export function taskView(task: Task, now: number) {
  const queued = task.status === 'queued';
  return {
    task_id: task.id,
    status: task.status,
    model: task.request.model,
    served_model: task.servedModel ?? null,
    pool_id: task.pool ?? null,
    session_id: task.request.sessionId ?? null,
    queue_position: queued ? Math.max(0, task.queuePosition) : 0,
    predicted_start_ms: queued ? task.predictedStartMs : 0,
    created_at: iso(task.createdAt),
    started_at: iso(task.runningSince),
    ended_at: iso(task.endedAt),
    queue_wait_ms: task.queueWaitMs,
    decode_time_ms: task.decodeTimeMs(now),
    tokens_out: task.tokensOut,
    last_event_id: task.events.lastId,
    error: task.error ?? null,
    artifact_id: task.artifactId ?? null,
    ...taskUrls(task.id),
  };
}

export type TaskView = ReturnType<typeof taskView>;
