/**
 * The worker's configuration: flags > environment > config file > defaults.
 * types (WorkerConfig) · options (the flag/env/file table, defaults, --help) · sources (reading
 * argv, env and the file into raw layers) · values (checking each raw value) · load (resolving it all).
 */
export { WorkerConfigError } from './types';
export type { WorkerConfig } from './types';
export { DEFAULTS, OPTIONS, helpText } from './options';
export { parseArgs } from './sources';
export type { ParsedArgs } from './sources';
export { toWebSocketBase } from './values';
export { connectUrl, connectUrls, loadWorkerConfig, workerConfig } from './load';
export type { LoadedConfig } from './load';
