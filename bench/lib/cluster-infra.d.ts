// The types of cluster-infra.js, for the TypeScript that requires it (test/cluster/support/postgres.ts).
import type { ChildProcess } from 'node:child_process';

export const POSTGRES_URL: string;

export function clusterUnavailable(): Promise<string | undefined>;

export interface Schema {
  schema: string;
  /** The base URL with `?schema=` (or `&schema=`) selecting it. */
  url: string;
  drop(): Promise<void>;
}

export function freshSchema(schema?: string, baseUrl?: string): Promise<Schema>;

export interface BenchRedis {
  child: ChildProcess;
  url: string;
  port: number;
  stop(): Promise<void>;
}

export function startRedis(port: number): Promise<BenchRedis>;

export function commandStats(port: number): Promise<Record<string, number>>;

export function commandDelta(before: Record<string, number>, after: Record<string, number>): { total: number; byCommand: Array<[string, number]> };
