import { CACHE_FLUSH_SCOPES } from '../protocol/messages';
import { checkClaims, LIFECYCLE_OPERATIONS, LifecycleOperation, MalformedOpToken, mintOpToken } from './op-token';
import { readOpTokenKey } from './op-token-key';

export const OP_TOKEN_HELP = `Usage: switchboard op-token --operation <operation> [--model <id>] [--scope <scope>]
                          --signer <name> [--signer <name> ...] [--key-file <path>]

Prints a verifiedOpToken for a governed lifecycle operation of the gateway (POST /v1/models/load,
/v1/models/unload, /v1/cache/flush), signed with the governance key. It is valid for 5 minutes
from now, for one use, and only for the operation, model and scope it names.

Options:
  --operation <op>   model-load, model-unload or cache-flush
  --model <id>       the model (required for model-load, model-unload and scope model)
  --scope <scope>    cache-flush only: all, model, tenant or tag
  --tenant <id>      cache-flush, scope tenant: bind the token to this tenant
  --tag <tag>        cache-flush, scope tag: bind the token to this tag
  --evict <id>       model-load: bind the token to evicting this model (and no other)
  --signer <name>    a governance signer who signed off (repeat: M of the N are needed)
  --key-file <path>  the shared HMAC key (default: $VERIFIED_OP_TOKEN_KEY_PATH)
  -h, --help         show this help and exit

Example:
  switchboard op-token --operation model-load --model meta-llama/Llama-3.1-8B-Instruct \\
    --signer alice --signer bob

The format, for other tools: docs/lifecycle.md#minting-tokens.
`;

const VALUE_OPTIONS = new Set(['--operation', '--model', '--scope', '--tenant', '--tag', '--evict', '--signer', '--key-file']);

/** What went wrong with the arguments (a usage error, exit status 2). */
export class OpTokenUsageError extends Error {}

export interface OpTokenArgs {
  operation: LifecycleOperation;
  model?: string;
  scope?: string;
  tenant?: string;
  tag?: string;
  evict?: string;
  signers: string[];
  keyFile: string;
}

/** Parses `--name value` and `--name=value`; throws OpTokenUsageError naming the problem. */
export function parseOpTokenArgs(args: readonly string[], env: Record<string, string | undefined>): OpTokenArgs {
  const values = new Map<string, string[]>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (!VALUE_OPTIONS.has(name)) throw new OpTokenUsageError(arg.startsWith('-') ? `unknown option ${name}` : `unexpected argument "${arg}"`);
    const value = eq > 0 && arg.startsWith('--') ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === '') throw new OpTokenUsageError(`${name} needs a value`);
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  const one = (name: string): string | undefined => {
    const v = values.get(name);
    if (v && v.length > 1) throw new OpTokenUsageError(`${name} given more than once`);
    return v?.[0];
  };
  const operation = one('--operation');
  if (!operation) throw new OpTokenUsageError(`--operation is required (${LIFECYCLE_OPERATIONS.join(', ')})`);
  if (!(LIFECYCLE_OPERATIONS as readonly string[]).includes(operation)) throw new OpTokenUsageError(`--operation must be one of ${LIFECYCLE_OPERATIONS.join(', ')}, got "${operation}"`);
  const out: OpTokenArgs = { operation: operation as LifecycleOperation, model: one('--model'), scope: one('--scope'), tenant: one('--tenant'), tag: one('--tag'), evict: one('--evict'), signers: values.get('--signer') ?? [], keyFile: '' };
  if (out.operation === 'cache-flush') {
    if (!out.scope) throw new OpTokenUsageError(`--scope is required for cache-flush (${CACHE_FLUSH_SCOPES.join(', ')})`);
    if (!(CACHE_FLUSH_SCOPES as readonly string[]).includes(out.scope)) throw new OpTokenUsageError(`--scope must be one of ${CACHE_FLUSH_SCOPES.join(', ')}, got "${out.scope}"`);
    if (out.scope === 'model' && !out.model) throw new OpTokenUsageError('--model is required with --scope model');
    if (out.scope !== 'model' && out.model) throw new OpTokenUsageError(`--model does not go with --scope ${out.scope}`);
    if (out.tenant && out.scope !== 'tenant') throw new OpTokenUsageError('--tenant goes with --scope tenant only');
    if (out.tag && out.scope !== 'tag') throw new OpTokenUsageError('--tag goes with --scope tag only');
  } else {
    if (out.evict && out.operation !== 'model-load') throw new OpTokenUsageError('--evict goes with model-load only');
    if (!out.model) throw new OpTokenUsageError(`--model is required for ${out.operation}`);
    if (out.scope || out.tenant || out.tag) throw new OpTokenUsageError('--scope, --tenant and --tag go with cache-flush only');
  }
  if (out.signers.length === 0) throw new OpTokenUsageError('at least one --signer is required');
  try {
    // What the gateway would refuse as malformed (a signer name with a space, a model id too long) is a usage error, not a token.
    checkClaims({ operation: out.operation, modelId: out.model, scope: out.scope, tenantId: out.tenant, tag: out.tag, evictModel: out.evict, issuedAt: 0, signers: out.signers, nonce: '0'.repeat(32) });
  } catch (e) {
    if (e instanceof MalformedOpToken) throw new OpTokenUsageError(`the gateway would refuse this token as malformed: ${e.message}`);
    throw e;
  }
  const keyFile = one('--key-file') ?? env.VERIFIED_OP_TOKEN_KEY_PATH;
  if (!keyFile) throw new OpTokenUsageError('no key: pass --key-file or set VERIFIED_OP_TOKEN_KEY_PATH');
  out.keyFile = keyFile;
  return out;
}

/** The token for parsed arguments, issued now (`nowMs`). Throws an Error when the key cannot be read. */
export function opTokenFor(args: OpTokenArgs, nowMs: number): string {
  const key = readOpTokenKey(args.keyFile);
  return mintOpToken(key, {
    operation: args.operation,
    modelId: args.model,
    scope: args.scope,
    tenantId: args.tenant,
    tag: args.tag,
    evictModel: args.evict,
    issuedAt: Math.floor(nowMs / 1000),
    signers: args.signers,
  });
}
