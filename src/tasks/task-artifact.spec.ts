import { buildJobArtifact } from '../artifacts/job-artifact';
import { Task } from './task';
import { jobArtifactOf } from './task-artifact';
import { parseTaskRequest, TaskRequest } from './task-request';

const LIMITS = { maxBytes: 64 * 1024, inlineTranscriptBytes: 4096, maxTranscriptBytes: 8192 };

function finishedTask(body: Record<string, unknown>, ran?: { type: string; version?: string; workerContext?: number }): Task {
  const request = parseTaskRequest(JSON.stringify({ model: 'm', prompt: 'p', max_tokens: 8, ...body })) as TaskRequest;
  const task = new Task({
    id: 't-1',
    tenant: 'default',
    request,
    budgetKey: 'k',
    limits: {},
    promptTokens: 1,
    correlationId: 'c',
    createdAt: 1_000,
    maxEvents: 100,
    maxBytes: 10_000,
  });
  if (ran) {
    task.runningSince = 1_500;
    task.runner = { type: ran.type, ...(ran.version ? { version: ran.version } : {}) };
    task.workerContext = ran.workerContext;
  }
  task.status = ran ? 'completed' : 'cancelled';
  task.endedAt = 2_000;
  return task;
}

describe('jobArtifactOf: ctx, engine and engine_version are always recorded', () => {
  it('a task that never ran: all three null, never left out of the artifact', () => {
    const input = jobArtifactOf(finishedTask({}));
    expect(input).toMatchObject({ ctx: null, engine: null, engineVersion: null });
    const content = buildJobArtifact(input, LIMITS).record.content as Record<string, unknown>;
    expect(content).toMatchObject({ ctx: null, engine: null, engine_version: null });
  });

  it("the client's ctx wins; without one, the context the serving worker advertised for the model", () => {
    expect(jobArtifactOf(finishedTask({ ctx: 2048 }, { type: 'vllm', version: '0.6.3', workerContext: 8192 }))).toMatchObject({
      ctx: 2048,
      engine: 'vllm',
      engineVersion: '0.6.3',
    });
    expect(jobArtifactOf(finishedTask({}, { type: 'vllm', version: '0.6.3', workerContext: 8192 }))).toMatchObject({ ctx: 8192 });
  });

  it('a worker that advertises no context and a runner without a version: null, not absent', () => {
    const content = buildJobArtifact(jobArtifactOf(finishedTask({}, { type: 'llama-server' })), LIMITS).record.content as Record<string, unknown>;
    expect(content).toMatchObject({ ctx: null, engine: 'llama-server', engine_version: null });
  });
});
