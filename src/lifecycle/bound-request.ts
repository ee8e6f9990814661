import type { RequestedOperation } from '../governance/op-token-verifier';
import { definedOnly } from './audit-context';
import type { FlushCacheDto, LoadModelDto, UnloadModelDto } from './lifecycle.dto';

/**
 * What each request asks for in the fields a token binds (docs/lifecycle.md#tokens): everything
 * that decides what the operation does, so a token signed for one target or one set of options
 * authorises nothing else. Absent fields stay absent (the token must not have them either).
 */
export function loadRequest(body: LoadModelDto): RequestedOperation {
  return definedOnly({
    operation: 'model-load' as const,
    modelId: body.modelId,
    evictModel: body.evictModel,
    pool: body.pool,
    workerId: body.workerId,
    replicas: body.replicas,
    quantization: body.quantization,
    gpuMemoryBudgetMB: body.gpuMemoryBudgetMB,
    maxContextLength: body.maxContextLength,
  });
}

export function unloadRequest(body: UnloadModelDto): RequestedOperation {
  return definedOnly({ operation: 'model-unload' as const, modelId: body.modelId, pool: body.pool, workerId: body.workerId });
}

export function flushRequest(body: FlushCacheDto): RequestedOperation {
  const { scope, modelId, tenantId, tag, pool, workerId } = body;
  return definedOnly({ operation: 'cache-flush' as const, scope, modelId, tenantId, tag, pool, workerId });
}
