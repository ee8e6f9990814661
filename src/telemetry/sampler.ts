import { diag } from '@opentelemetry/api';
import { getNumberFromEnv, getStringFromEnv } from '@opentelemetry/core';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, Sampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';

/**
 * The sampler of `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG`, as the SDK's tracer provider
 * builds it (its builder is not exported): the SDK's own sampler classes, the spec's default
 * `parentbased_always_on`, an unknown name or a ratio outside [0, 1] falling back like the SDK's.
 */
export function samplerFromEnv(): Sampler {
  const name = getStringFromEnv('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratioFromEnv());
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratioFromEnv()) });
    default:
      diag.error(`OTEL_TRACES_SAMPLER value "${name}" invalid, defaulting to "parentbased_always_on".`);
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function ratioFromEnv(): number {
  const ratio = getNumberFromEnv('OTEL_TRACES_SAMPLER_ARG');
  return ratio === undefined || ratio < 0 || ratio > 1 ? 1 : ratio;
}
