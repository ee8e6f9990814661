import type { ProviderDefaults } from '../config';
import type { ProviderRecord } from './provider-store';

/** Node timers overflow past 2^31-1 ms (about 24.8 days). */
export const MAX_TIMER_SECS = 2147483;

/**
 * How a limit is held: `count` an integer; `ms` milliseconds in the record and the database, seconds
 * (a number) in the admin API and the config file; `number` a plain number; `boolean`; `enum` one of `values`.
 */
export type LimitKind = 'count' | 'ms' | 'number' | 'boolean' | 'enum';

/** One scalar setting of a provider, as every layer names and bounds it. */
export interface ProviderLimit {
  /** The record's (and the entity's) property. */
  key: keyof ProviderRecord;
  /** The admin API's and the config file's name. */
  api: string;
  /** The `providers` table's column. */
  column: string;
  kind: LimitKind;
  /** Bounds in the API's unit (seconds for `ms`), where the admin API checks them. */
  min?: number;
  max?: number;
  values?: readonly string[];
  /** Whether null is a value (it clears the pool's own setting: the gateway-wide one applies). */
  nullable: boolean;
  /** What a provider created through the admin API gets when the body leaves it out. */
  default: { from: keyof ProviderDefaults } | { value: boolean | null } | { none: true };
  /** Whether the admin API reads and writes it (the chargeback figures are set in the config file only). */
  admin: boolean;
}

/**
 * The scalar settings of a provider, declared once (issue 17): the store's row mapping and column
 * list, the service's patch, the admin API's mapping and its OpenAPI properties are read from here.
 * The class-validator DTO and the entity's columns stay declarations of their own;
 * provider-limits.spec.ts fails when they and this table disagree on the fields.
 */
export const PROVIDER_LIMITS: readonly ProviderLimit[] = [
  { key: 'enabled', api: 'enabled', column: 'enabled', kind: 'boolean', nullable: false, default: { value: true }, admin: true },
  { key: 'maxQueueLen', api: 'max_queue_len', column: 'max_queue_len', kind: 'count', min: 0, nullable: false, default: { from: 'maxQueueLen' }, admin: true },
  {
    key: 'queueTimeoutMs',
    api: 'queue_timeout_secs',
    column: 'queue_timeout_ms',
    kind: 'ms',
    min: 0.001,
    max: MAX_TIMER_SECS,
    nullable: false,
    default: { from: 'queueTimeoutMs' },
    admin: true,
  },
  {
    key: 'requestTimeoutMs',
    api: 'request_timeout_secs',
    column: 'request_timeout_ms',
    kind: 'ms',
    min: 0.001,
    max: MAX_TIMER_SECS,
    nullable: false,
    default: { from: 'requestTimeoutMs' },
    admin: true,
  },
  {
    key: 'firstByteTimeoutMs',
    api: 'first_byte_timeout_secs',
    column: 'first_byte_timeout_ms',
    kind: 'ms',
    min: 0.001,
    max: MAX_TIMER_SECS,
    nullable: true,
    default: { value: null },
    admin: true,
  },
  {
    key: 'maxModelsPerWorker',
    api: 'max_models',
    column: 'max_models_per_worker',
    kind: 'count',
    min: 1,
    nullable: false,
    default: { from: 'maxModelsPerWorker' },
    admin: true,
  },
  { key: 'priority', api: 'priority', column: 'priority', kind: 'count', min: 0, nullable: true, default: { value: null }, admin: true },
  {
    key: 'translation',
    api: 'translation',
    column: 'translation',
    kind: 'enum',
    values: ['auto', 'never'],
    nullable: true,
    default: { value: null },
    admin: true,
  },
  {
    key: 'costPerGpuHour',
    api: 'cost_per_gpu_hour',
    column: 'cost_per_gpu_hour',
    kind: 'number',
    min: 0,
    nullable: true,
    default: { none: true },
    admin: false,
  },
  { key: 'gpusPerWorker', api: 'gpus_per_worker', column: 'gpus_per_worker', kind: 'number', nullable: true, default: { none: true }, admin: false },
];

/** The limits the admin API reads and writes. */
export const ADMIN_LIMITS = PROVIDER_LIMITS.filter((f) => f.admin);

/** A stored value as the record holds it: a nullable limit absent from the row is null, an enum value not in its list too. */
export function limitFromRow(f: ProviderLimit, value: unknown): unknown {
  if (f.kind === 'enum') return f.values!.includes(value as string) ? value : null;
  return f.nullable ? (value ?? null) : value;
}

/** A record's value in the API's unit (`ms` as seconds). */
export function limitToApi(f: ProviderLimit, value: unknown): unknown {
  if (f.kind === 'ms') return value == null ? null : (value as number) / 1000;
  return f.nullable ? (value ?? null) : value;
}

/**
 * An API value as the record holds it (`ms` from seconds); undefined (left out) stays undefined.
 * A null sent for a limit that is not nullable passes the DTO (`@IsOptional`); it is read as the
 * API always read it: as 0 seconds for a time, as null otherwise.
 */
export function limitFromApi(f: ProviderLimit, value: unknown): unknown {
  if (value === undefined) return undefined;
  if (f.kind !== 'ms' || (value === null && f.nullable)) return value;
  return Math.round(Number(value) * 1000);
}
