import type { SchemaObject } from '@nestjs/swagger';
import { Errors } from '../../common/gateway-error';
import type { OperationDoc } from '../api-doc';
import { ADMIN_SECURITY, ISO_TIME, json, jsonResponse, NULLABLE_ISO_TIME, pathParam, ref, TAGS } from './common';
import { ADMIN_AUTH_CODES, errorResponses } from './errors';

/** `/admin/keys`, `/admin/tenants` and `/admin/usage`: the tenancy side of the admin API. */

const priority: SchemaObject = { type: 'string', enum: ['high', 'normal', 'low'] };
const tenantId: SchemaObject = { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' };
const models: SchemaObject = { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string', maxLength: 256 } };
const expiresAt: SchemaObject = { type: 'string', description: 'ISO 8601 date or date-time with a time zone, in the future (e.g. `2026-12-31T00:00:00Z`).' };
const count: SchemaObject = { type: 'integer', minimum: 0 };

function nullable(s: SchemaObject): SchemaObject {
  return { ...s, nullable: true };
}

const keyFields = (nullClears: boolean): Record<string, SchemaObject> => {
  const n = (s: SchemaObject) => (nullClears ? nullable(s) : s);
  return {
    name: { type: 'string', minLength: 1, maxLength: 128 },
    tenant: tenantId,
    rpm: n({ ...count, description: 'Requests per minute for this key.' }),
    tpm: n({ ...count, description: 'Tokens per minute for this key.' }),
    priority: n({ ...priority, description: 'Default priority of its requests.' }),
    models: n({ ...models, description: 'Models it may use; absent = all.' }),
    expires_at: n(expiresAt),
    enabled: { type: 'boolean', description: '`false` revokes the key at once; `true` restores it.' },
  };
};

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

const KEY_EXAMPLE = {
  id: 'key_Qm3vX9pL2wR8tY4u',
  name: 'billing-service',
  tenant: 'team-a',
  prefix: 'sb-Xk3v9QpL',
  source: 'admin',
  enabled: true,
  status: 'active',
  rpm: 600,
  tpm: null,
  priority: 'normal',
  models: null,
  expires_at: null,
  created_at: '2026-11-22T20:50:00.000Z',
  last_used_at: null,
  revoked_at: null,
};

const TENANT_EXAMPLE = {
  id: 'team-a',
  source: 'admin',
  settings: { rpm: 600, tpm: 200000, tokens_per_day: 5000000, priority: 'normal', max_priority: 'high', max_queued: 50, models: null, session_tokens: 200000, session_time_secs: 3600, pools: null },
  created_at: '2026-11-20T09:00:00.000Z',
  updated_at: '2026-11-22T20:50:00.000Z',
};

export const ADMIN_DATA_SCHEMAS: Record<string, SchemaObject> = {
  CreateKey: { type: 'object', required: ['name', 'tenant'], properties: keyFields(false), additionalProperties: false },
  UpdateKey: { type: 'object', properties: keyFields(true), additionalProperties: false, description: '`null` clears rpm, tpm, priority, models, expires_at. Keys from the config file take only `enabled`.' },
  ApiKey: {
    type: 'object',
    required: ['id', 'name', 'tenant', 'prefix', 'source', 'enabled', 'status', 'rpm', 'tpm', 'priority', 'models', 'expires_at', 'created_at', 'last_used_at', 'revoked_at'],
    properties: {
      id: { type: 'string' },
      name: { type: 'string' },
      tenant: { type: 'string' },
      prefix: { type: 'string', nullable: true, description: '`sb-` + 8 characters; null for keys from the config file.' },
      source: { type: 'string', enum: ['admin', 'config'] },
      enabled: { type: 'boolean' },
      status: { type: 'string', enum: ['active', 'disabled', 'revoked', 'expired'] },
      rpm: { type: 'integer', nullable: true },
      tpm: { type: 'integer', nullable: true },
      priority: nullable(priority),
      models: { type: 'array', items: { type: 'string' }, nullable: true },
      expires_at: NULLABLE_ISO_TIME,
      created_at: NULLABLE_ISO_TIME,
      last_used_at: NULLABLE_ISO_TIME,
      revoked_at: NULLABLE_ISO_TIME,
    },
  },
  CreatedApiKey: {
    allOf: [
      ref('ApiKey'),
      { type: 'object', required: ['key'], properties: { key: { type: 'string', pattern: '^sb-.{43}$', description: 'Shown only here: only its SHA-256 is stored.' } } },
    ],
  },
  ApiKeyList: { type: 'object', required: ['data'], properties: { data: { type: 'array', items: ref('ApiKey') } } },
  Deleted: { type: 'object', required: ['deleted'], properties: { deleted: { type: 'string' } } },
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
  TenantList: { type: 'object', required: ['data', 'defaults'], properties: { data: { type: 'array', items: ref('Tenant') }, defaults: ref('TenantSettings') } },
  TenantDeleted: { type: 'object', required: ['deleted', 'now'], properties: { deleted: { type: 'string' }, now: ref('Tenant') } },
  Usage: {
    type: 'object',
    required: ['object', 'group_by', 'filters', 'data'],
    properties: {
      object: { type: 'string', enum: ['usage'] },
      group_by: { type: 'string', enum: ['tenant', 'key', 'model', 'day'], nullable: true },
      filters: {
        type: 'object',
        required: ['tenant', 'key', 'since', 'until'],
        properties: { tenant: { type: 'string', nullable: true }, key: { type: 'string', nullable: true }, since: NULLABLE_ISO_TIME, until: NULLABLE_ISO_TIME },
      },
      data: {
        type: 'array',
        description: 'One row of totals, or one per group; the group value is under the `group_by` name (null for rows without one, last).',
        items: {
          type: 'object',
          required: ['requests', 'errors', 'prompt_tokens', 'completion_tokens', 'total_tokens'],
          properties: {
            tenant: { type: 'string', nullable: true },
            key: { type: 'string', nullable: true },
            model: { type: 'string', nullable: true },
            day: { type: 'string', nullable: true, pattern: '^\\d{4}-\\d{2}-\\d{2}$' },
            requests: { type: 'integer' },
            errors: { type: 'integer', description: 'Requests that ended with a status >= 400.' },
            prompt_tokens: { type: 'integer' },
            completion_tokens: { type: 'integer' },
            total_tokens: { type: 'integer' },
          },
        },
      },
    },
  },
};

const admin = (codes: Parameters<typeof errorResponses>[1] = [], overrides?: Parameters<typeof errorResponses>[2]) =>
  errorResponses('openai', [...codes, ...ADMIN_AUTH_CODES], overrides);
const keyId = pathParam('id', 'The key id.', KEY_EXAMPLE.id);
const tenant = pathParam('id', 'The tenant id (1-64 characters of `A-Z a-z 0-9 . _ -`).', 'team-a');
const keyNotFound = { not_found: Errors.notFound('API key', 'key_missing') };
const keyInvalid = { invalid_request: Errors.invalidRequest('tenant is required; rpm must be an integer >= 0, got -1') };
const tenantInvalid = { invalid_request: Errors.invalidRequest('body.rpm must be a number >= 0; body.priority must be one of high, normal, low') };

const timeParam = (name: string, meaning: string) => ({
  name,
  in: 'query' as const,
  required: false,
  description: `${meaning}: ISO-8601 date (midnight UTC) or date-time, or epoch milliseconds.`,
  schema: { type: 'string' },
  example: name === 'since' ? '2025-01-01' : '2025-02-01',
});

export const ADMIN_DATA_API = {
  createKey: {
    operationId: 'createApiKey',
    summary: 'Create a client API key',
    description: 'The answer carries the key in `key`: the only time it is shown.',
    tags: [TAGS.keys],
    security: ADMIN_SECURITY,
    requestBody: { required: true, content: json(ref('CreateKey'), { typical: { summary: 'A key for one service', value: { name: 'billing-service', tenant: 'team-a', rpm: 600 } } }) },
    responses: {
      201: jsonResponse('Created', ref('CreatedApiKey'), { ...KEY_EXAMPLE, key: 'sb-Xk3v9QpLmZ2wR8tY4uI0oP6aS1dF5gH7jK9lQ3xCv8b' }),
      ...admin(['invalid_request'], keyInvalid),
    },
  },
  listKeys: {
    operationId: 'listApiKeys',
    summary: 'Client API keys',
    description: 'Never the key or its hash.',
    tags: [TAGS.keys],
    security: ADMIN_SECURITY,
    responses: { 200: jsonResponse('The keys', ref('ApiKeyList'), { data: [KEY_EXAMPLE] }), ...admin() },
  },
  getKey: {
    operationId: 'getApiKey',
    summary: 'One client API key',
    tags: [TAGS.keys],
    security: ADMIN_SECURITY,
    parameters: [keyId],
    responses: { 200: jsonResponse('The key', ref('ApiKey'), KEY_EXAMPLE), ...admin(['not_found'], keyNotFound) },
  },
  updateKey: {
    operationId: 'updateApiKey',
    summary: 'Update a client API key',
    description: '`enabled: false` revokes it at once. Keys from the config file take only `enabled` (else `409 conflict`).',
    tags: [TAGS.keys],
    security: ADMIN_SECURITY,
    parameters: [keyId],
    requestBody: { required: true, content: json(ref('UpdateKey'), { revoke: { summary: 'Revoke the key', value: { enabled: false } } }) },
    responses: { 200: jsonResponse('The key', ref('ApiKey')), ...admin(['invalid_request', 'not_found', 'conflict'], keyNotFound) },
  },
  deleteKey: {
    operationId: 'deleteApiKey',
    summary: 'Delete a client API key',
    description: 'The key stops working at once; `409 conflict` for keys from the config file.',
    tags: [TAGS.keys],
    security: ADMIN_SECURITY,
    parameters: [keyId],
    responses: { 200: jsonResponse('Deleted', ref('Deleted'), { deleted: KEY_EXAMPLE.id }), ...admin(['not_found', 'conflict'], keyNotFound) },
  },
  listTenants: {
    operationId: 'listTenants',
    summary: 'Tenants with settings of their own, and the defaults',
    tags: [TAGS.tenants],
    security: ADMIN_SECURITY,
    responses: {
      200: jsonResponse('The tenants', ref('TenantList'), {
        data: [TENANT_EXAMPLE],
        defaults: { rpm: 60, tpm: null, tokens_per_day: null, priority: null, max_priority: null, max_queued: null, models: null, session_tokens: null, session_time_secs: null, pools: null },
      }),
      ...admin(),
    },
  },
  getTenant: {
    operationId: 'getTenant',
    summary: "A tenant's effective settings and where they come from",
    tags: [TAGS.tenants],
    security: ADMIN_SECURITY,
    parameters: [tenant],
    responses: { 200: jsonResponse('The tenant', ref('Tenant'), TENANT_EXAMPLE), ...admin(['invalid_request']) },
  },
  putTenant: {
    operationId: 'putTenant',
    summary: "Store a tenant's whole settings",
    description: 'They override the config file\'s entry and apply at once; every problem is reported in one 400.',
    tags: [TAGS.tenants],
    security: ADMIN_SECURITY,
    parameters: [tenant],
    requestBody: { required: true, content: json(ref('PutTenant'), { typical: { summary: 'Limits and a budget', value: { rpm: 600, tpm: 200000, tokens_per_day: 5000000, max_priority: 'high' } } }) },
    responses: { 200: jsonResponse('The tenant', ref('Tenant'), TENANT_EXAMPLE), ...admin(['invalid_request'], tenantInvalid) },
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
        now: { id: 'team-a', source: 'default', settings: { rpm: 60, tpm: null, tokens_per_day: null, priority: null, max_priority: null, max_queued: null, models: null, session_tokens: null, session_time_secs: null, pools: null } },
      }),
      ...admin(['invalid_request', 'not_found'], { not_found: Errors.notFound('Tenant', 'team-a') }),
    },
  },
  usage: {
    operationId: 'getUsage',
    summary: 'Usage totals for chargeback',
    description: 'Totals of the usage records of finished requests; records appear after up to `USAGE_FLUSH_INTERVAL_SECS`.',
    tags: [TAGS.usage],
    security: ADMIN_SECURITY,
    parameters: [
      { name: 'tenant', in: 'query', required: false, description: "Only this tenant's requests.", schema: tenantId },
      { name: 'key', in: 'query', required: false, description: 'Only requests made with this API key id.', schema: { type: 'string' } },
      timeParam('since', 'Requests received at or after (inclusive)'),
      timeParam('until', 'Requests received before (exclusive)'),
      { name: 'group_by', in: 'query', required: false, description: 'Without it: one row of totals.', schema: { type: 'string', enum: ['tenant', 'key', 'model', 'day'] } },
    ],
    responses: {
      200: jsonResponse('Totals', ref('Usage'), {
        object: 'usage',
        group_by: 'tenant',
        filters: { tenant: null, key: null, since: '2025-01-01T00:00:00.000Z', until: '2025-02-01T00:00:00.000Z' },
        data: [
          { tenant: 'team-a', requests: 1520, errors: 12, prompt_tokens: 803211, completion_tokens: 120044, total_tokens: 923255 },
          { tenant: 'team-b', requests: 87, errors: 0, prompt_tokens: 10233, completion_tokens: 4410, total_tokens: 14643 },
        ],
      }),
      ...admin(['invalid_request'], { invalid_request: Errors.invalidRequest("Query parameter 'group_by' must be one of tenant, key, model, day, got 'week'", 'group_by') }),
    },
  },
} satisfies Record<string, OperationDoc>;
