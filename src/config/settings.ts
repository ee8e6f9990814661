/**
 * Every declared configuration key, by group, in the order docs/configuration.md lists them. The
 * reload diff (restart-settings.ts) and the docs tables (docs-table.ts) walk this list.
 */
import type { SettingGroup } from './setting';
import { API_KEYS_SETTINGS } from './sections/api-keys';
import { ARTIFACTS_SETTINGS } from './sections/artifacts';
import { CLUSTER_SETTINGS } from './sections/cluster';
import { CONNECTION_SETTINGS } from './sections/connection';
import { GOVERNANCE_SETTINGS } from './sections/governance';
import { LIFECYCLE_SETTINGS } from './sections/lifecycle';
import { TELEMETRY_SETTINGS } from './sections/telemetry';
import { OIDC_SETTINGS } from './sections/auth';
import { QUEUE_SETTINGS } from './sections/queue';
import { ROUTING_SETTINGS } from './sections/routing';
import { ROUTING_AFFINITY_SETTINGS } from './sections/routing-affinity';
import { PROVIDER_ENTRY_SETTINGS } from './sections/providers';
import { PROVIDER_DEFAULT_SETTINGS, PROVIDER_LIST_SETTINGS, SERVER_SETTINGS, WORKER_RECORD_SETTINGS } from './sections/server';
import { TASKS_SETTINGS } from './sections/tasks';
import { TENANCY_SETTINGS } from './sections/tenancy';
import { USAGE_SETTINGS } from './sections/usage';

/** The groups that are YAML sections of their own (`routing:`, `usage:`, …), in the file's order. */
export const SECTION_GROUPS: SettingGroup[] = [
  ROUTING_SETTINGS,
  ROUTING_AFFINITY_SETTINGS,
  QUEUE_SETTINGS,
  USAGE_SETTINGS,
  ARTIFACTS_SETTINGS,
  TASKS_SETTINGS,
  GOVERNANCE_SETTINGS,
  LIFECYCLE_SETTINGS,
  TELEMETRY_SETTINGS,
  CLUSTER_SETTINGS,
];

export const SETTING_GROUPS: SettingGroup[] = [
  SERVER_SETTINGS,
  PROVIDER_DEFAULT_SETTINGS,
  PROVIDER_LIST_SETTINGS,
  PROVIDER_ENTRY_SETTINGS,
  CONNECTION_SETTINGS,
  API_KEYS_SETTINGS,
  TENANCY_SETTINGS,
  ...SECTION_GROUPS,
  OIDC_SETTINGS,
  WORKER_RECORD_SETTINGS,
];
