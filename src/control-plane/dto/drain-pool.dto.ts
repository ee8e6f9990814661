import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';

export class DrainPoolDto {
  /** Milliseconds each worker of the pool gets to finish its in-flight work (default SHUTDOWN_DRAIN_TIMEOUT_SECS). */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(86_400_000)
  deadline_ms?: number;

  @IsOptional()
  @IsString()
  @MaxLength(200)
  reason?: string;
}
