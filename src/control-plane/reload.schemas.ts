import type { SchemaObject } from '@nestjs/swagger';
import { Errors, GatewayError } from '../common/gateway-error';
import { errorBody } from '../common/error-dialect';
import type { OperationDoc } from '../common/api-doc';
import { ADMIN_SECURITY, json, jsonResponse, pathParam, ref, TAGS } from '../common/doc-common';
import { adminErrors } from '../common/doc-errors';
import { names } from './admin.schemas';
import { rejectedWithProblems } from './pool-reload';

/** OpenAPI of the configuration reload (reload.controller.ts) and the pool reload (pools.controller.ts). */

function nameChanges(...more: string[]): SchemaObject {
  const keys = ['added', 'updated', 'removed', ...more];
  return { type: 'object', required: keys, properties: Object.fromEntries(keys.map((k) => [k, names])) };
}

export const RELOAD_SCHEMAS: Record<string, SchemaObject> = {
  ReloadResult: {
    type: 'object',
    required: ['reloaded', 'config_file', 'changes', 'restart_required', 'warnings'],
    properties: {
      reloaded: { type: 'boolean', enum: [true] },
      config_file: { type: 'string', nullable: true },
      changes: {
        type: 'object',
        description:
          'What the reload changed, by part: names added, updated and removed; `routing` has one entry per changed key, `{from, to}` or `{added, updated, removed}`.',
        properties: {
          providers: nameChanges(),
          tenants: nameChanges('overridden'),
          routing: { type: 'object', additionalProperties: { type: 'object', additionalProperties: true } },
        },
        additionalProperties: true,
      },
      restart_required: { type: 'array', items: { type: 'string' }, description: 'Changed settings that need a restart (by YAML key): not applied.' },
      warnings: { type: 'array', items: { type: 'string' } },
    },
  },
  PoolReload: {
    type: 'object',
    description: 'A field left out keeps its value; a field given replaces it as a whole (`{}` or `[]` clears it; `null` is refused).',
    properties: {
      models: { type: 'array', maxItems: 10000, items: { type: 'string', minLength: 1, maxLength: 256 }, description: "The pool's declared models." },
      aliases: {
        type: 'object',
        additionalProperties: { type: 'string' },
        description: 'Pool aliases, `{alias: target}`: each target a model of the pool; single level.',
      },
      capabilities: {
        type: 'object',
        additionalProperties: ref('ModelCapabilities'),
        description: 'Per-model capability declarations (`"*"` for every model).',
      },
    },
    additionalProperties: false,
  },
  PoolDeclarations: {
    type: 'object',
    required: ['id', 'models', 'aliases', 'capabilities'],
    description: "The pool's declarations after the reload.",
    properties: {
      id: { type: 'string' },
      models: { type: 'array', items: { type: 'string' } },
      aliases: { type: 'object', additionalProperties: { type: 'string' } },
      capabilities: { type: 'object', additionalProperties: ref('ModelCapabilities') },
    },
    additionalProperties: false,
  },
};

const poolId = pathParam('id', 'The pool (provider) name.', 'gpu-a');
const notFoundPool = Errors.notFound('Pool', 'gpu-z');
/** The body the gateway writes for an admin error. */
const body = (e: GatewayError) => errorBody('openai', e);

/** The answers of the reload examples: the pool reload and configuration reload docs' own. */
const RELOADED = {
  reloaded: true,
  config_file: '/etc/switchboard/switchboard.yaml',
  changes: {
    routing: { aliases: { added: ['gpt-4o'], updated: [], removed: [] }, strategy: { from: 'smart', to: 'round_robin' } },
    providers: { added: ['gpu-west'], updated: ['gpu-east'], removed: ['old-pool'] },
    tenants: { added: ['team-c'], updated: ['team-a'], removed: [], overridden: [] },
  },
  restart_required: ['heartbeat_interval_secs'],
  warnings: [],
};
export const POOL_RELOAD_EXAMPLE = {
  path: '/v1/pools/gpu-east/reload',
  body: {
    models: ['llama-3.1-70b', 'llama-3.1-8b'],
    aliases: { fast: 'llama-3.1-8b' },
    capabilities: { 'llama-3.1-70b': { vision: false, context_length: 32768 } },
  },
};
export const POOL_RELOAD_REFUSED = {
  path: '/v1/pools/gpu-east/reload',
  body: { aliases: { fast: 'llama-3.1-8b' }, capabilities: { 'llama-3.1-8b': { vision: 'yes' } } },
  problems: [
    'capabilities.llama-3.1-8b.vision must be true or false',
    'aliases.fast: target "llama-3.1-8b" is not a model of pool "gpu-east" (declare it in models, or connect a worker that serves it)',
  ],
};
/** A config file whose reload is refused, and the problems the gateway names for it. */
export const CONFIG_RELOAD_REFUSED = {
  file: 'bogus_key: 1\ntenants:\n  team-a:\n    rpm: -5\n',
  problems: ['tenants.team-a.rpm must be an integer >= 0 <= 9007199254740991, got "-5"', 'bogus_key (config file) is not a setting'],
};

export const RELOAD_API = {
  reload: {
    operationId: 'reloadConfiguration',
    summary: 'Reload the configuration file',
    description:
      'Re-reads `CONFIG_FILE` (like SIGHUP) and applies its providers, routing and tenants all or nothing. Settings that need a restart are listed in ' +
      '`restart_required` and not applied. When the file has problems nothing changes: `400` lists every one in `error.problems`.',
    tags: [TAGS.config],
    security: ADMIN_SECURITY,
    responses: {
      200: jsonResponse('Reloaded', ref('ReloadResult'), RELOADED),
      ...adminErrors(['invalid_request'], { invalid_request: rejectedWithProblems('Configuration', CONFIG_RELOAD_REFUSED.problems) }),
    },
    xExamples: {
      reloaded: {
        summary: 'A new global alias, strategy, provider and tenant; a restart-only setting changed',
        request: { path: '/admin/reload' },
        response: { status: 200, body: RELOADED },
      },
      refused: {
        summary: 'The file has problems: nothing changes',
        request: { path: '/admin/reload' },
        response: { status: 400, body: body(rejectedWithProblems('Configuration', CONFIG_RELOAD_REFUSED.problems)) },
      },
    },
  },
  reloadPool: {
    operationId: 'reloadPool',
    summary: "Replace a pool's models, aliases or capabilities",
    description:
      "Validates the whole body, then swaps the three in at once and stores them; answers the pool's new declarations. Any problem answers `400` " +
      'with every one in `error.problems`, and nothing changes. An unknown pool is `404` before the body is judged.',
    tags: [TAGS.pools],
    security: ADMIN_SECURITY,
    parameters: [poolId],
    requestBody: {
      required: false,
      content: json(ref('PoolReload'), { typical: { summary: 'New models, an alias and a capability declaration', value: POOL_RELOAD_EXAMPLE.body } }),
    },
    responses: {
      200: jsonResponse("The pool's new declarations", ref('PoolDeclarations'), { id: 'gpu-east', ...POOL_RELOAD_EXAMPLE.body }),
      ...adminErrors(['invalid_request', 'not_found', 'internal_error'], {
        invalid_request: rejectedWithProblems("Reload of pool 'gpu-east'", POOL_RELOAD_REFUSED.problems),
        not_found: notFoundPool,
        internal_error: new GatewayError('internal_error', "Pool 'gpu-east' could not be stored; its previous models, aliases and capabilities stay"),
      }),
    },
    xExamples: {
      reloaded: {
        summary: 'New models, an alias and a capability declaration, all at once',
        request: POOL_RELOAD_EXAMPLE,
        response: { status: 200, body: { id: 'gpu-east', ...POOL_RELOAD_EXAMPLE.body } },
      },
      refused: {
        summary: 'Problems: nothing changes',
        request: { path: POOL_RELOAD_REFUSED.path, body: POOL_RELOAD_REFUSED.body },
        response: { status: 400, body: body(rejectedWithProblems("Reload of pool 'gpu-east'", POOL_RELOAD_REFUSED.problems)) },
      },
      unknown: {
        summary: 'An unknown pool (checked before the body)',
        request: { path: '/v1/pools/gpu-z/reload', body: {} },
        response: { status: 404, body: body(notFoundPool) },
      },
    },
  },
} satisfies Record<string, OperationDoc>;
