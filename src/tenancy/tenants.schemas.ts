import type { SchemaObject } from '@nestjs/swagger';
import { Errors } from '../common/gateway-error';
import type { OperationDoc } from '../common/api-doc';
import { ADMIN_SECURITY, ISO_TIME, json, jsonResponse, pathParam, ref, TAGS } from '../common/doc-common';
import { adminErrors } from '../common/doc-errors';

/** OpenAPI of `/admin/tenants` (tenants.controller.ts), and the tenancy fields the keys and usage docs share. */

export const priority: SchemaObject = { type: 'string', enum: ['high', 'normal', 'low'] };
export const tenantId: SchemaObject = { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' };
export const models: SchemaObject = { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string', maxLength: 256 } };
export const count: SchemaObject = { type: 'integer', minimum: 0 };

export function nullable(s: SchemaObject): SchemaObject {
  return { ...s, nullable: true };
}

const tenantSettings = (description: string): SchemaObject => ({
  type: 'object',
  description,
  properties: {
    rpm: nullable(count),
    tpm: nullable(count),
    tokens_per_day: nullable(count),
    priority: nullable(priority),
    max_priority: nullable(priority),
    max_queued: nullable(count),
    max_concurrent: nullable({
      ...count,
      minimum: 1,
      description: 'How many of its requests may be on workers at once; more wait in the queue ([routing](routing.md#concurrency-caps)).',
    }),
    models: { type: 'array', items: { type: 'string' }, nullable: true },
    session_tokens: nullable({ ...count, description: 'The most tokens one task session may spend ([tasks](tasks.md#session-budgets)).' }),
    session_time_secs: nullable({ ...count, description: 'The most seconds one task session may run.' }),
    pools: {
      type: 'array',
      minItems: 1,
      items: { type: 'string' },
      nullable: true,
      description: 'Pools (provider names) its requests may reach; null = every pool ([tenancy](tenancy.md#pools)).',
    },
  },
  additionalProperties: false,
});

const TENANT_EXAMPLE = {
  id: 'team-a',
  source: 'admin',
  settings: {
    rpm: 600,
    tpm: 200000,
    tokens_per_day: 5000000,
    priority: 'normal',
    max_priority: 'high',
    max_queued: 50,
    max_concurrent: 8,
    models: null,
    session_tokens: 200000,
    session_time_secs: 3600,
    pools: null,
  },
  created_at: '2026-11-20T09:00:00.000Z',
  updated_at: '2026-11-22T20:50:00.000Z',
};

export const TENANTS_SCHEMAS: Record<string, SchemaObject> = {
  TenantSettings: tenantSettings('Settings as the config file spells them; unset ones are null.'),
  PutTenant: tenantSettings("The tenant's whole settings (absent = no limit / the default)."),
  Tenant: {
    type: 'object',
    required: ['id', 'source', 'settings'],
    properties: {
      id: { type: 'string' },
      source: { type: 'string', enum: ['admin', 'config', 'default'] },
      settings: ref('TenantSettings'),
      created_at: ISO_TIME,
      updated_at: ISO_TIME,
    },
  },
  TenantList: {
    type: 'object',
    required: ['data', 'defaults'],
    properties: { data: { type: 'array', items: ref('Tenant') }, defaults: ref('TenantSettings') },
  },
  TenantDeleted: { type: 'object', required: ['deleted', 'now'], properties: { deleted: { type: 'string' }, now: ref('Tenant') } },
};

const tenant = pathParam('id', 'The tenant id (1-64 characters of `A-Z a-z 0-9 . _ -`).', 'team-a');
const tenantInvalid = { invalid_request: Errors.invalidRequest('body.rpm must be a number >= 0; body.priority must be one of high, normal, low') };

export const TENANTS_API = {
  listTenants: {
    operationId: 'listTenants',
    summary: 'Tenants with settings of their own, and the defaults',
    tags: [TAGS.tenants],
    security: ADMIN_SECURITY,
    responses: {
      200: jsonResponse('The tenants', ref('TenantList'), {
        data: [TENANT_EXAMPLE],
        defaults: {
          rpm: 60,
          tpm: null,
          tokens_per_day: null,
          priority: null,
          max_priority: null,
          max_queued: null,
          max_concurrent: null,
          models: null,
          session_tokens: null,
          session_time_secs: null,
          pools: null,
        },
      }),
      ...adminErrors(),
    },
  },
  getTenant: {
    operationId: 'getTenant',
    summary: "A tenant's effective settings and where they come from",
    tags: [TAGS.tenants],
    security: ADMIN_SECURITY,
    parameters: [tenant],
    responses: { 200: jsonResponse('The tenant', ref('Tenant'), TENANT_EXAMPLE), ...adminErrors(['invalid_request']) },
  },
  putTenant: {
    operationId: 'putTenant',
    summary: "Store a tenant's whole settings",
    description: "They override the config file's entry and apply at once; every problem is reported in one 400.",
    tags: [TAGS.tenants],
    security: ADMIN_SECURITY,
    parameters: [tenant],
    requestBody: {
      required: true,
      content: json(ref('PutTenant'), {
        typical: { summary: 'Limits and a budget', value: { rpm: 600, tpm: 200000, tokens_per_day: 5000000, max_priority: 'high' } },
      }),
    },
    responses: { 200: jsonResponse('The tenant', ref('Tenant'), TENANT_EXAMPLE), ...adminErrors(['invalid_request'], tenantInvalid) },
  },
  deleteTenant: {
    operationId: 'deleteTenant',
    summary: "Forget a tenant's stored settings",
    description: 'The configured settings or the defaults apply again; `404 not_found` when none are stored.',
    tags: [TAGS.tenants],
    security: ADMIN_SECURITY,
    parameters: [tenant],
    responses: {
      200: jsonResponse('Deleted', ref('TenantDeleted'), {
        deleted: 'team-a',
        now: {
          id: 'team-a',
          source: 'default',
          settings: {
            rpm: 60,
            tpm: null,
            tokens_per_day: null,
            priority: null,
            max_priority: null,
            max_queued: null,
            max_concurrent: null,
            models: null,
            session_tokens: null,
            session_time_secs: null,
            pools: null,
          },
        },
      }),
      ...adminErrors(['invalid_request', 'not_found'], { not_found: Errors.notFound('Tenant', 'team-a') }),
    },
  },
} satisfies Record<string, OperationDoc>;
