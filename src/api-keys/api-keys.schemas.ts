import type { SchemaObject } from '@nestjs/swagger';
import { Errors } from '../common/gateway-error';
import type { OperationDoc } from '../common/api-doc';
import { ADMIN_SECURITY, json, jsonResponse, NULLABLE_ISO_TIME, pathParam, ref, TAGS } from '../common/doc-common';
import { adminErrors } from '../common/doc-errors';
import { count, models, nullable, priority, tenantId } from '../tenancy/tenants.schemas';

/** OpenAPI of `/admin/keys` (api-keys.controller.ts). */

const expiresAt: SchemaObject = { type: 'string', description: 'ISO 8601 date or date-time with a time zone, in the future (e.g. `2026-12-31T00:00:00Z`).' };

const keyFields = (nullClears: boolean): Record<string, SchemaObject> => {
  const n = (s: SchemaObject) => (nullClears ? nullable(s) : s);
  return {
    name: { type: 'string', minLength: 1, maxLength: 128 },
    tenant: tenantId,
    rpm: n({ ...count, description: 'Requests per minute for this key.' }),
    tpm: n({ ...count, description: 'Tokens per minute for this key.' }),
    max_concurrent: n({
      ...count,
      minimum: 1,
      description: 'How many of its requests may be on workers at once; more wait in the queue ([routing](routing.md#concurrency-caps)).',
    }),
    priority: n({ ...priority, description: 'Default priority of its requests.' }),
    models: n({ ...models, description: 'Models it may use; absent = all.' }),
    expires_at: n(expiresAt),
    enabled: { type: 'boolean', description: '`false` revokes the key at once; `true` restores it.' },
  };
};

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
  max_concurrent: 4,
  priority: 'normal',
  models: null,
  expires_at: null,
  created_at: '2026-11-22T20:50:00.000Z',
  last_used_at: null,
  revoked_at: null,
};

export const API_KEYS_SCHEMAS: Record<string, SchemaObject> = {
  CreateKey: { type: 'object', required: ['name', 'tenant'], properties: keyFields(false), additionalProperties: false },
  UpdateKey: {
    type: 'object',
    properties: keyFields(true),
    additionalProperties: false,
    description: '`null` clears rpm, tpm, max_concurrent, priority, models, expires_at. Keys from the config file take only `enabled`.',
  },
  ApiKey: {
    type: 'object',
    required: [
      'id',
      'name',
      'tenant',
      'prefix',
      'source',
      'enabled',
      'status',
      'rpm',
      'tpm',
      'max_concurrent',
      'priority',
      'models',
      'expires_at',
      'created_at',
      'last_used_at',
      'revoked_at',
    ],
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
      max_concurrent: { type: 'integer', nullable: true },
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
      {
        type: 'object',
        required: ['key'],
        properties: { key: { type: 'string', pattern: '^sb-.{43}$', description: 'Shown only here: only its SHA-256 is stored.' } },
      },
    ],
  },
  ApiKeyList: { type: 'object', required: ['data'], properties: { data: { type: 'array', items: ref('ApiKey') } } },
  Deleted: { type: 'object', required: ['deleted'], properties: { deleted: { type: 'string' } } },
};

const keyId = pathParam('id', 'The key id.', KEY_EXAMPLE.id);
const keyNotFound = { not_found: Errors.notFound('API key', 'key_missing') };
const keyInvalid = { invalid_request: Errors.invalidRequest('tenant is required; rpm must be an integer >= 0, got -1') };

export const API_KEYS_API = {
  createKey: {
    operationId: 'createApiKey',
    summary: 'Create a client API key',
    description: 'The answer carries the key in `key`: the only time it is shown.',
    tags: [TAGS.keys],
    security: ADMIN_SECURITY,
    requestBody: {
      required: true,
      content: json(ref('CreateKey'), { typical: { summary: 'A key for one service', value: { name: 'billing-service', tenant: 'team-a', rpm: 600 } } }),
    },
    responses: {
      201: jsonResponse('Created', ref('CreatedApiKey'), { ...KEY_EXAMPLE, key: 'sb-Xk3v9QpLmZ2wR8tY4uI0oP6aS1dF5gH7jK9lQ3xCv8b' }),
      ...adminErrors(['invalid_request'], keyInvalid),
    },
  },
  listKeys: {
    operationId: 'listApiKeys',
    summary: 'Client API keys',
    description: 'Never the key or its hash.',
    tags: [TAGS.keys],
    security: ADMIN_SECURITY,
    responses: { 200: jsonResponse('The keys', ref('ApiKeyList'), { data: [KEY_EXAMPLE] }), ...adminErrors() },
  },
  getKey: {
    operationId: 'getApiKey',
    summary: 'One client API key',
    tags: [TAGS.keys],
    security: ADMIN_SECURITY,
    parameters: [keyId],
    responses: { 200: jsonResponse('The key', ref('ApiKey'), KEY_EXAMPLE), ...adminErrors(['not_found'], keyNotFound) },
  },
  updateKey: {
    operationId: 'updateApiKey',
    summary: 'Update a client API key',
    description: '`enabled: false` revokes it at once. Keys from the config file take only `enabled` (else `409 conflict`).',
    tags: [TAGS.keys],
    security: ADMIN_SECURITY,
    parameters: [keyId],
    requestBody: { required: true, content: json(ref('UpdateKey'), { revoke: { summary: 'Revoke the key', value: { enabled: false } } }) },
    responses: { 200: jsonResponse('The key', ref('ApiKey')), ...adminErrors(['invalid_request', 'not_found', 'conflict'], keyNotFound) },
  },
  deleteKey: {
    operationId: 'deleteApiKey',
    summary: 'Delete a client API key',
    description: 'The key stops working at once; `409 conflict` for keys from the config file.',
    tags: [TAGS.keys],
    security: ADMIN_SECURITY,
    parameters: [keyId],
    responses: { 200: jsonResponse('Deleted', ref('Deleted'), { deleted: KEY_EXAMPLE.id }), ...adminErrors(['not_found', 'conflict'], keyNotFound) },
  },
} satisfies Record<string, OperationDoc>;
