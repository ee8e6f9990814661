import type { SchemaObject } from '@nestjs/swagger';
import type { OperationDoc } from '../common/api-doc';
import { ADMIN_SCHEMAS } from './admin.schemas';
import { ADMIN_API } from './admin-operations.schemas';
import { CLUSTER_SCHEMAS } from './cluster.schemas';
import { POOLS_API, POOLS_SCHEMAS } from './pools.schemas';
import { RELOAD_API, RELOAD_SCHEMAS } from './reload.schemas';

export { CAPABILITIES_EXAMPLE } from './pools.schemas';
export { CONFIG_RELOAD_REFUSED, POOL_RELOAD_EXAMPLE, POOL_RELOAD_REFUSED } from './reload.schemas';

/** Admin providers/workers/cordons/stats, `/v1/pools/*`, `/v1/capabilities` and the reload routes: the parts, in one place. */

export const CONTROL_PLANE_SCHEMAS: Record<string, SchemaObject> = { ...ADMIN_SCHEMAS, ...POOLS_SCHEMAS, ...RELOAD_SCHEMAS, ...CLUSTER_SCHEMAS };

export const CONTROL_PLANE_API = { ...ADMIN_API, ...POOLS_API, ...RELOAD_API } satisfies Record<string, OperationDoc>;
