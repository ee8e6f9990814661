import { Allow, IsIn, IsInt, IsOptional, IsString, Length, Matches, Max, Min } from 'class-validator';
import { Errors } from '../common/gateway-error';
import { JsonBodyPipe } from '../common/json-body.pipe';
import { CACHE_FLUSH_SCOPES, CacheFlushScope } from '../protocol';

/**
 * Bodies of the lifecycle routes, in the runner API's camelCase. `verifiedOpToken` is only let
 * through here: the governance verifier judges it (missing, malformed, …), each case its own code.
 */
/**
 * Names relayed to workers, stored (PostgreSQL refuses a NUL) and audited: no control characters,
 * as for the model names of API keys.
 */
const NoControlCharacters = () => Matches(/^[^\x00-\x1f\x7f]*$/, { message: '$property must not contain control characters' });

class TargetDto {
  @Allow()
  verifiedOpToken?: unknown;

  @IsOptional()
  @IsString()
  @Length(1, 64)
  pool?: string;

  @IsOptional()
  @IsString()
  @Length(1, 128)
  workerId?: string;
}

export class LoadModelDto extends TargetDto {
  @IsString()
  @Length(1, 255)
  @NoControlCharacters()
  modelId!: string;

  @IsOptional()
  @IsString()
  @Length(1, 64)
  @NoControlCharacters()
  quantization?: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  maxContextLength?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  gpuMemoryBudgetMB?: number;

  @IsOptional()
  @IsString()
  @Length(1, 255)
  @NoControlCharacters()
  evictModel?: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(64)
  replicas?: number;
}

export class UnloadModelDto extends TargetDto {
  @IsString()
  @Length(1, 255)
  @NoControlCharacters()
  modelId!: string;
}

export class FlushCacheDto extends TargetDto {
  @IsIn(CACHE_FLUSH_SCOPES)
  scope!: CacheFlushScope;

  @IsOptional()
  @IsString()
  @Length(1, 255)
  @NoControlCharacters()
  modelId?: string;

  @IsOptional()
  @IsString()
  @Length(1, 64)
  @NoControlCharacters()
  tenantId?: string;

  @IsOptional()
  @IsString()
  @Length(1, 128)
  @NoControlCharacters()
  tag?: string;
}

const LOAD_BODY = new JsonBodyPipe(LoadModelDto);
const UNLOAD_BODY = new JsonBodyPipe(UnloadModelDto);
const FLUSH_BODY = new JsonBodyPipe(FlushCacheDto);

/** 400 (not JSON) or 422 (fields) as on every admin route; `null` counts as absent. */
export function parseLoadBody(raw: unknown): LoadModelDto {
  const dto = withoutNulls(LOAD_BODY.transform(raw));
  if (dto.workerId !== undefined && dto.replicas !== undefined && dto.replicas !== 1) {
    throw Errors.validationFailed([{ field: 'replicas', message: 'replicas must be 1 (or absent) when workerId names the worker' }]);
  }
  if (dto.evictModel !== undefined && dto.evictModel === dto.modelId) {
    throw Errors.validationFailed([{ field: 'evictModel', message: 'evictModel must not be the model being loaded' }]);
  }
  return dto;
}

export function parseUnloadBody(raw: unknown): UnloadModelDto {
  return withoutNulls(UNLOAD_BODY.transform(raw));
}

/** Scope `model` needs `modelId`, `tenant` needs `tenantId`, `tag` needs `tag`; other scopes take none of them. */
export function parseFlushBody(raw: unknown): FlushCacheDto {
  const dto = withoutNulls(FLUSH_BODY.transform(raw));
  const needs: Record<CacheFlushScope, 'modelId' | 'tenantId' | 'tag' | undefined> = { all: undefined, model: 'modelId', tenant: 'tenantId', tag: 'tag' };
  const problems: Array<{ field: string; message: string }> = [];
  const needed = needs[dto.scope];
  if (needed && dto[needed] === undefined) problems.push({ field: needed, message: `${needed} is required with scope '${dto.scope}'` });
  for (const field of ['modelId', 'tenantId', 'tag'] as const) {
    if (field !== needed && dto[field] !== undefined) problems.push({ field, message: `${field} does not go with scope '${dto.scope}'` });
  }
  if (problems.length) throw Errors.validationFailed(problems);
  return dto;
}

function withoutNulls<T extends object>(dto: T): T {
  for (const [k, v] of Object.entries(dto)) if (v === null) delete (dto as Record<string, unknown>)[k];
  return dto;
}
