import { CacheFlushMessage, ModelLoadMessage, ModelUnloadMessage } from '../../../protocol';
import { JsonObject } from '../probes/json';
import { Answer, backendMessage, expectOk, isMissingRoute, objectOf } from './backend-http';
import { Figures, LifecycleAdapter, OperationContext, OperationFailed, Unsupported, compact, figure } from './types';

/**
 * A backend that implements the runner API itself (model-runner-api §2–§4): the operation is
 * forwarded as it is, camelCase fields and the governance token included (the backend verifies
 * it again), and a load task is polled at `GET /v1/models/load/{taskId}` until it ends, its
 * progress and eta relayed.
 */
export class RunnerApiAdapter implements LifecycleAdapter {
  readonly runner = 'runner-api' as const;

  async load(command: ModelLoadMessage, ctx: OperationContext): Promise<Figures> {
    const body = compact({
      modelId: command.model_id,
      quantization: command.quantization,
      maxContextLength: command.max_context_length,
      gpuMemoryBudgetMB: command.gpu_memory_budget_mb,
      evictModel: command.evict_model,
      verifiedOpToken: command.verified_op_token,
    });
    let task = objectOf(await this.forward(ctx, '/v1/models/load', body), 'POST /v1/models/load');
    const taskId = task.taskId;
    for (;;) {
      const status = task.status;
      if (status === 'completed') return compact({ gpu_memory_used_mb: figure(task.gpuMemoryUsedMB) });
      if (status === 'failed') throw new OperationFailed(`the backend failed the load: ${messageOf(task) ?? 'no reason given'}`);
      if (typeof taskId !== 'string' || taskId === '') {
        throw new OperationFailed('POST /v1/models/load answered without a taskId to follow');
      }
      const progress = figure(task.progress);
      if (progress !== undefined && progress <= 1) ctx.progress(progress, figure(task.eta));
      await ctx.pause();
      const call = `GET /v1/models/load/${taskId}`;
      task = objectOf(expectOk(await ctx.http.get(`/v1/models/load/${encodeURIComponent(taskId)}`, ctx.signal), call), call);
      task.taskId ??= taskId;
    }
  }

  async unload(command: ModelUnloadMessage, ctx: OperationContext): Promise<Figures> {
    const answer = await this.forward(ctx, '/v1/models/unload', compact({ modelId: command.model_id, verifiedOpToken: command.verified_op_token }));
    const doc = objectOf(answer, 'POST /v1/models/unload');
    return compact({ gpu_memory_freed_mb: figure(doc.gpuMemoryFreedMB) });
  }

  async flush(command: CacheFlushMessage, ctx: OperationContext): Promise<Figures> {
    const body = compact({
      scope: command.scope,
      modelId: command.model_id,
      tenantId: command.tenant_id,
      tag: command.tag,
      verifiedOpToken: command.verified_op_token,
    });
    const doc = objectOf(await this.forward(ctx, '/v1/cache/flush', body), 'POST /v1/cache/flush');
    if (doc.flushed === false) throw new OperationFailed(`the backend did not flush: ${messageOf(doc) ?? 'it answered flushed: false'}`);
    return compact({ entries_removed: figure(doc.entriesRemoved), memory_freed_mb: figure(doc.memoryFreedMB) });
  }

  private async forward(ctx: OperationContext, path: string, body: object): Promise<Answer> {
    const answer = await ctx.http.post(path, body, ctx.signal);
    if (isMissingRoute(answer)) {
      throw new Unsupported(
        `the backend answered ${answer.status} to POST ${path}: it does not implement this runner-API operation (${backendMessage(answer)})`,
      );
    }
    return expectOk(answer, `POST ${path}`);
  }
}

function messageOf(doc: JsonObject): string | undefined {
  for (const key of ['error', 'message', 'detail']) {
    const v = doc[key];
    if (typeof v === 'string' && v.trim()) return v.trim().slice(0, 300);
    if (v && typeof v === 'object' && typeof (v as JsonObject).message === 'string') return ((v as JsonObject).message as string).slice(0, 300);
  }
  return undefined;
}
