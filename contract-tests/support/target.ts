/**
 * Where the suite points: the gateway started by globalSetup, or an already running one named by
 * SWITCHBOARD_URL. globalSetup serialises this into CONTRACT_TARGET for the test files.
 */
export interface ProviderRef {
  name: string;
  secret: string;
}

export interface Target {
  /** http://host:port, no trailing slash. */
  url: string;
  /** ws://host:port/v1/worker/connect */
  wsUrl: string;
  /** Secret of the default provider. */
  workerSecret: string;
  defaultProvider: string;
  adminToken: string;
  /** A second enabled provider with its own secret. */
  second: ProviderRef;
  /** A disabled provider that declares `disabledModel`. */
  disabled: ProviderRef & { model: string };
  /** True when SWITCHBOARD_URL named a server this suite did not start. */
  external: boolean;
  heartbeatIntervalMs: number;
  heartbeatTimeoutMs: number;
  maxRequeues: number;
  maxStreamBytes: number;
}

export const PROTOCOL_VERSION = '2026-04-bridge-v1';

export function target(): Target {
  const raw = process.env.CONTRACT_TARGET;
  if (!raw) throw new Error('CONTRACT_TARGET is not set: run the suite with `npm run test:contract` (globalSetup sets it)');
  return JSON.parse(raw) as Target;
}

/** Generous wait budget for anything that depends on the heartbeat timings of the target. */
export function heartbeatBudgetMs(multiple = 4): number {
  const t = target();
  return Math.max(5_000, multiple * t.heartbeatTimeoutMs);
}
