import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsInt, IsNumber, IsObject, IsOptional, IsString, Matches, Max, Min, MinLength } from 'class-validator';
import { MAX_TIMER_SECS } from '../../providers/provider-limits';

// The limits here are declared again as validation (providers/provider-limits.ts is the table);
// provider-limits.spec.ts fails when the two disagree on names, nullability or bounds.

export class UpdateProviderDto {
  @IsOptional()
  @IsString()
  @MinLength(8)
  secret?: string;

  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @IsOptional()
  @IsInt()
  @Min(0)
  max_queue_len?: number;

  @IsOptional()
  @IsNumber()
  @Min(0.001)
  @Max(MAX_TIMER_SECS)
  queue_timeout_secs?: number;

  @IsOptional()
  @IsNumber()
  @Min(0.001)
  @Max(MAX_TIMER_SECS)
  request_timeout_secs?: number;

  /** The pool's own first-byte watchdog timeout; null clears it (back to `routing.first_byte_timeout_secs`). */
  @IsOptional()
  @IsNumber()
  @Min(0.001)
  @Max(MAX_TIMER_SECS)
  first_byte_timeout_secs?: number | null;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_models?: number;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(10000)
  @IsString({ each: true })
  models?: string[];

  /** Routing priority of the provider's workers (lower is preferred); null clears it. */
  @IsOptional()
  @IsInt()
  @Min(0)
  priority?: number | null;

  /** Per-model capabilities `{model: {vision, tools, json_mode, context_length}}`, checked by the controller. */
  @IsOptional()
  @IsObject()
  capabilities?: Record<string, unknown>;

  /** `auto`/`never`: whether requests may reach its workers by translation; null clears it (back to `routing.translation`). */
  @IsOptional()
  @IsIn(['auto', 'never'])
  translation?: 'auto' | 'never' | null;
}

export class CreateProviderDto extends UpdateProviderDto {
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/)
  name!: string;
}
