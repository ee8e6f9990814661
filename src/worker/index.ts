export { WorkerDaemon } from './daemon';
export type { WorkerDaemonOptions, DaemonStatus, DaemonState, DaemonEvents, DisconnectInfo } from './daemon';
export { WorkerConfigError, loadWorkerConfig, workerConfig, connectUrl, helpText } from './config';
export type { WorkerConfig } from './config';
export { createLogger } from './logger';
export type { Logger, LogLevel } from './logger';
export { runCli } from './cli';
