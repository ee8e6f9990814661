import { Global, Module } from '@nestjs/common';
import { Tracing } from './tracing.service';

/**
 * OpenTelemetry traces (docs/enterprise.md#tracing-with-a-collector). Global, like the usage
 * module: Nest runs a global module's shutdown hooks after the feature modules', so the spans of
 * requests that end while workers drain are still exported.
 */
@Global()
@Module({ providers: [Tracing], exports: [Tracing] })
export class TelemetryModule {}
