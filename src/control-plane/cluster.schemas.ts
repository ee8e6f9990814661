import type { SchemaObject } from '@nestjs/swagger';
import type { OperationDoc } from '../common/api-doc';
import { ADMIN_SECURITY, ISO_TIME, jsonResponse, ref, TAGS } from '../common/doc-common';
import { adminErrors } from '../common/doc-errors';

/** OpenAPI of `GET /admin/cluster` (cluster.controller.ts). */

export const CLUSTER_SCHEMAS: Record<string, SchemaObject> = {
  ClusterMember: {
    type: 'object',
    required: ['id', 'advertise_url', 'started_at', 'last_seen', 'version', 'self'],
    properties: {
      id: { type: 'string', description: '`CLUSTER_REPLICA_ID` (host name and pid by default).' },
      advertise_url: { type: 'string', description: 'Where the other replicas reach it; empty until its listener listens.' },
      started_at: ISO_TIME,
      last_seen: { ...ISO_TIME, description: "Its last heartbeat, by Redis's clock." },
      version: { type: 'string' },
      self: { type: 'boolean', description: 'The replica that answered.' },
    },
  },
  Cluster: {
    type: 'object',
    required: ['enabled', 'replica_id', 'degraded', 'members'],
    properties: {
      enabled: { type: 'boolean', description: '`false`: one process (no `CLUSTER_REDIS_URL`); `members` is this process alone.' },
      replica_id: { type: 'string' },
      degraded: {
        type: 'boolean',
        description: "`true` while this replica cannot reach the cluster's Redis: it serves the workers connected to it alone, and `members` is itself only.",
      },
      replica_timeout_secs: { type: 'number', description: 'In cluster mode: a replica silent this long is dropped.' },
      members: { type: 'array', items: ref('ClusterMember'), description: 'Live replicas, the answering one first.' },
    },
  },
};

const MEMBERS = [
  {
    id: 'gw-1',
    advertise_url: 'http://gw-1:8080',
    started_at: '2026-11-27T00:10:00.000Z',
    last_seen: '2026-11-27T00:20:01.000Z',
    version: '0.1.0',
    self: true,
  },
  {
    id: 'gw-2',
    advertise_url: 'http://gw-2:8080',
    started_at: '2026-11-27T00:10:02.000Z',
    last_seen: '2026-11-27T00:20:00.000Z',
    version: '0.1.0',
    self: false,
  },
];

export const CLUSTER_API = {
  cluster: {
    operationId: 'getCluster',
    summary: 'Cluster membership',
    description:
      "The gateway replicas that share this one's Redis, as this replica sees them (read from Redis when asked, within `CLUSTER_REDIS_TIMEOUT_MS`), and whether it is degraded. Outside cluster mode: `enabled: false` and this process alone. See [cluster.md](cluster.md).",
    tags: [TAGS.config],
    security: ADMIN_SECURITY,
    responses: {
      200: jsonResponse('Members', ref('Cluster'), { enabled: true, replica_id: 'gw-1', degraded: false, replica_timeout_secs: 10, members: MEMBERS }),
      ...adminErrors(),
    },
  },
} satisfies Record<string, OperationDoc>;
