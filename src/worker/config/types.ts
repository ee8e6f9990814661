import { ModelCapabilities } from '../../protocol';
import { RunnerChoice } from '../models/lifecycle/types';
import { LogLevel } from '../logger';

/** Everything the daemon needs, resolved and validated. Durations are milliseconds. */
export interface WorkerConfig {
  /** ws:// or wss:// base of the gateway, no trailing slash (the first one when several are given). */
  proxyUrl: string;
  /**
   * Every gateway base when `--proxy-url a,b,c` names several replicas: the link moves to the next
   * on a close or a refused connection. Unset or one entry = `proxyUrl` alone, as before.
   */
  proxyUrls?: string[];
  workerSecret: string;
  provider: string;
  /** Backend root (no trailing slash, no trailing /v1): endpoint paths are appended to it. */
  backendUrl: string;
  /** When set, replaces the client's credentials on every backend call. */
  backendApiKey?: string;
  /** True when models were configured as `*`: the list is read from the backend's /v1/models. */
  discoverModels: boolean;
  /** The explicit model list (empty when `discoverModels`). */
  models: string[];
  workerName: string;
  maxConcurrency: number;
  capabilities: Record<string, ModelCapabilities>;
  logLevel: LogLevel;
  drainTimeoutMs: number;
  exitOnDrain: boolean;
  heartbeatIntervalMs: number;
  reconnectMinMs: number;
  reconnectMaxMs: number;
  modelsPollIntervalMs: number;
  /** Ask the backend what it is and what it can do (capabilities, endpoints, runner). */
  probe: boolean;
  /** Routing priority asked of the gateway, lower is preferred; unset = the gateway's default. */
  priority?: number;
  /** PEM file with private CA certificates trusted in addition to the usual ones. */
  caFile?: string;
  /** NODE_EXTRA_CA_CERTS, kept when --ca-file replaces the CA list. */
  extraCaCertsFile?: string;
  insecureSkipVerify: boolean;
  /** From HTTP_PROXY / http_proxy: for ws:// and http:// targets. */
  httpProxy?: string;
  /** From HTTPS_PROXY / https_proxy: for wss:// and https:// targets. */
  httpsProxy?: string;
  /** From NO_PROXY / no_proxy. */
  noProxy?: string;
  /** Ask the gateway for model lifecycle operations (load, unload, cache flush) and carry them out. */
  modelLifecycle: boolean;
  /** The backend type lifecycle operations are carried out for; `auto` = what the probe detected. */
  runner: RunnerChoice;
  /** Deadline of one lifecycle operation. */
  lifecycleTimeoutMs: number;
  /** vLLM: the directory (as the vLLM host sees it) LoRA adapters are loaded from by name. */
  loraDir?: string;
}

/** Raised once with every bad value, so an operator fixes them all in one go. */
export class WorkerConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid worker configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'WorkerConfigError';
  }
}
