import { IsNumber, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';

export class DrainWorkerDto {
  /** Seconds the worker gets to finish in-flight work (fractions allowed). */
  @IsOptional()
  @IsNumber()
  @Min(0.001)
  @Max(86400)
  timeout_secs?: number;

  @IsOptional()
  @IsString()
  @MaxLength(200)
  reason?: string;
}
