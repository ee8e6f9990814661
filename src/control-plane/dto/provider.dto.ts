import { ArrayMaxSize, IsArray, IsBoolean, IsInt, IsNumber, IsOptional, IsString, Matches, Min, MinLength } from 'class-validator';

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
  queue_timeout_secs?: number;

  @IsOptional()
  @IsNumber()
  @Min(0.001)
  request_timeout_secs?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_models?: number;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(10000)
  @IsString({ each: true })
  models?: string[];
}

export class CreateProviderDto extends UpdateProviderDto {
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/)
  name!: string;
}
