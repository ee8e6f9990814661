import { Env, Reader } from '../../common/config-reader';
import { bool, group, read, str, yamlKeys } from '../setting';

/** The `telemetry:` section: OpenTelemetry traces (docs/observability.md#traces, docs/enterprise.md). */
export interface TelemetryConfig {
  /**
   * Where spans go (OTLP over HTTP, `…/v1/traces`); undefined = tracing off, no span is ever made.
   * The other standard `OTEL_*` variables (sampler, headers, batching, service name) are read by
   * the OpenTelemetry SDK itself.
   */
  tracesEndpoint: string | undefined;
  /** Record the prompt in the request's span (`gen_ai.input.messages`); never by default. */
  captureContent: boolean;
}

export const TELEMETRY_SETTINGS = group('telemetry', 'telemetry', {
  otlpEndpoint: str({
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    reload: 'restart',
    fields: ['tracesEndpoint'],
    docDefault: 'none (tracing off)',
    doc: 'the OTLP/HTTP collector base URL (`http://collector:4318`): spans go to `<url>/v1/traces`. Set, every request and task is traced ([enterprise.md](enterprise.md#tracing-with-a-collector)); the standard `OTEL_*` variables (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_BSP_*`) apply',
  }),
  tracesEndpoint: str({
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    reload: 'restart',
    fields: ['tracesEndpoint'],
    docDefault: 'none',
    doc: 'the full OTLP/HTTP traces URL, used as is; wins over `OTEL_EXPORTER_OTLP_ENDPOINT`',
  }),
  sdkDisabled: bool({
    env: 'OTEL_SDK_DISABLED',
    default: false,
    reload: 'restart',
    fields: ['tracesEndpoint'],
    doc: '`true`: tracing off whatever the endpoint',
  }),
  captureContent: bool({
    env: 'TELEMETRY_CAPTURE_CONTENT',
    yaml: 'capture_content',
    default: false,
    reload: 'restart',
    fields: ['captureContent'],
    doc: "`true`: a request's span records its prompt (`gen_ai.input.messages`, the request body). Off, no prompt or completion content is ever recorded",
  }),
});
const S = TELEMETRY_SETTINGS.settings;
const KEYS = yamlKeys(TELEMETRY_SETTINGS);

export function readTelemetryConfig(env: Env, section: unknown, problems: string[]): TelemetryConfig {
  const yaml = section && typeof section === 'object' && !Array.isArray(section) ? (section as Record<string, unknown>) : {};
  if (section !== undefined && section !== null && yaml !== section) problems.push('telemetry (config file) must be a mapping');
  const r = new Reader(env, yaml, 'telemetry', KEYS);
  const base = read(r, env, S.otlpEndpoint);
  const full = read(r, env, S.tracesEndpoint);
  const disabled = read(r, env, S.sdkDisabled);
  const endpoint = full || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (endpoint && (!/^https?:\/\/[^/]/.test(endpoint) || !URL.canParse(endpoint))) {
    problems.push(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, got '${shownUrl(endpoint)}'`);
  }
  const config: TelemetryConfig = { tracesEndpoint: disabled ? undefined : endpoint, captureContent: read(r, env, S.captureContent) };
  for (const key of r.unknownKeys()) problems.push(`telemetry.${key} (config file) is not a telemetry setting (known: ${KEYS.join(', ')})`);
  problems.push(...r.problems);
  return config;
}

/** An endpoint as a problem may show it: without credentials (the part before `@`). */
function shownUrl(url: string): string {
  return url.replace(/\/\/[^/@]*@/, '//***@');
}
