import { CACHE_FLUSH_SCOPES } from '../protocol/messages';
import { BoundClaims, checkClaims, LIFECYCLE_OPERATIONS, LifecycleOperation, MalformedOpToken, mintOpToken } from './op-token';
import { addSignature, readPrivateKey, unsignedToken } from './op-token-ed25519';
import { readOpTokenKey } from '../common/op-token-key';

export const OP_TOKEN_HELP = `Usage: switchboard op-token --operation <operation> [--model <id>] [target and options ...]
                          [--key <private key file> --signer <name>]
       switchboard op-token keygen --signer <name> [--out <file>]
       switchboard op-token sign --key <private key file> --signer <name> [<token>]
       switchboard op-token verify [--signers-file <file>] [--required-signers <M>] [<token>]

Governed lifecycle operations of the gateway (POST /v1/models/load, /v1/models/unload,
/v1/cache/flush) need a verifiedOpToken signed by M of the N governance signers, each with their
own Ed25519 key. The flow:

  1. once per signer:  switchboard op-token keygen --signer alice --out alice.key
                       (prints "alice: <public key>" for the gateway's governance.signers)
  2. anyone:           switchboard op-token --operation model-load --model llama3:8b --worker w-1
                       prints an unsigned token binding exactly that operation, issued now
  3. each signer:      switchboard op-token sign --key alice.key --signer alice <token>
                       prints the token with alice's signature added: pass it on to the next
  4. check it:         switchboard op-token verify --signers-file signers.yaml <token>

A token is valid for 5 minutes from its creation, for one use, and only for a request whose body
has exactly the values it binds (absent ones absent). <token> is read from stdin when omitted.

Creating a token (the operation and everything it binds):
  --operation <op>           model-load, model-unload or cache-flush
  --model <id>               the model (model-load, model-unload; cache-flush with --scope model)
  --evict <id>               model-load: the evictModel
  --pool <pool>              the request's pool
  --worker <id>              the request's workerId
  --replicas <n>             model-load: the request's replicas
  --quantization <q>         model-load: the request's quantization
  --gpu-memory-budget-mb <n> model-load: the request's gpuMemoryBudgetMB
  --max-context-length <n>   model-load: the request's maxContextLength
  --scope <scope>            cache-flush: all, model, tenant or tag
  --tenant <id>              cache-flush, scope tenant: the tenantId
  --tag <tag>                cache-flush, scope tag: the tag
  --key <file> --signer <n>  also sign it at once as that signer (step 3)
  --key-file <file>          shared-key (HMAC) format instead, signed with that key for every
                             --signer given (GOVERNANCE_SHARED_KEY_COMPAT gateways only; also
                             $VERIFIED_OP_TOKEN_KEY_PATH when --signer is given without --key)
  -h, --help                 show this help and exit

The format, for other tools: docs/lifecycle.md#tokens.
`;

const VALUE_OPTIONS = new Set([
  '--operation',
  '--model',
  '--scope',
  '--tenant',
  '--tag',
  '--evict',
  '--pool',
  '--worker',
  '--replicas',
  '--quantization',
  '--gpu-memory-budget-mb',
  '--max-context-length',
  '--signer',
  '--key',
  '--key-file',
]);

/** What went wrong with the arguments (a usage error, exit status 2). */
export class OpTokenUsageError extends Error {}

export interface OpTokenArgs {
  claims: BoundClaims;
  signers: string[];
  /** Ed25519 private key file: sign the new token as `signers[0]`. */
  key?: string;
  /** Shared HMAC key file: the seed's format. */
  keyFile?: string;
}

/** `--name value` and `--name=value` into a map of every value given; throws OpTokenUsageError. */
export function readOptions(args: readonly string[], known: ReadonlySet<string>, positional?: string[]): Map<string, string[]> {
  const values = new Map<string, string[]>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (!known.has(name)) {
      if (positional && !arg.startsWith('-')) {
        positional.push(arg);
        continue;
      }
      throw new OpTokenUsageError(arg.startsWith('-') ? `unknown option ${name}` : `unexpected argument "${arg}"`);
    }
    const value = eq > 0 && arg.startsWith('--') ? arg.slice(eq + 1) : args[++i];
    if (value === undefined || value === '') throw new OpTokenUsageError(`${name} needs a value`);
    values.set(name, [...(values.get(name) ?? []), value]);
  }
  return values;
}

export function oneOf(values: Map<string, string[]>, name: string): string | undefined {
  const v = values.get(name);
  if (v && v.length > 1) throw new OpTokenUsageError(`${name} given more than once`);
  return v?.[0];
}

function integer(values: Map<string, string[]>, name: string): number | undefined {
  const v = oneOf(values, name);
  if (v === undefined) return undefined;
  if (!/^[0-9]+$/.test(v)) throw new OpTokenUsageError(`${name} must be a positive integer, got "${v}"`);
  return Number(v);
}

/** Parses the arguments of the create command; throws OpTokenUsageError naming the problem. */
export function parseOpTokenArgs(args: readonly string[], env: Record<string, string | undefined>): OpTokenArgs {
  const values = readOptions(args, VALUE_OPTIONS);
  const one = (name: string) => oneOf(values, name);
  const operation = one('--operation');
  if (!operation) throw new OpTokenUsageError(`--operation is required (${LIFECYCLE_OPERATIONS.join(', ')})`);
  if (!(LIFECYCLE_OPERATIONS as readonly string[]).includes(operation))
    throw new OpTokenUsageError(`--operation must be one of ${LIFECYCLE_OPERATIONS.join(', ')}, got "${operation}"`);
  const claims: BoundClaims = dropUndefined({
    operation: operation as LifecycleOperation,
    modelId: one('--model'),
    evictModel: one('--evict'),
    pool: one('--pool'),
    workerId: one('--worker'),
    replicas: integer(values, '--replicas'),
    quantization: one('--quantization'),
    gpuMemoryBudgetMB: integer(values, '--gpu-memory-budget-mb'),
    maxContextLength: integer(values, '--max-context-length'),
    scope: one('--scope'),
    tenantId: one('--tenant'),
    tag: one('--tag'),
  });
  checkOperation(claims);
  const signers = values.get('--signer') ?? [];
  try {
    // What the gateway would refuse as malformed (a model id too long, replicas 0) is a usage error, not a token.
    checkClaims({ ...claims, issuedAt: 0, nonce: '0'.repeat(32) });
  } catch (e) {
    if (e instanceof MalformedOpToken) throw new OpTokenUsageError(`the gateway would refuse this token as malformed: ${e.message}`);
    throw e;
  }
  const key = one('--key');
  const keyFile = one('--key-file') ?? (key === undefined && signers.length > 0 ? env.VERIFIED_OP_TOKEN_KEY_PATH || undefined : undefined);
  if (key !== undefined && keyFile !== undefined) throw new OpTokenUsageError('--key (Ed25519) and --key-file (shared HMAC key) do not go together');
  if (keyFile === undefined && key === undefined && signers.length > 0) throw new OpTokenUsageError("--signer needs --key (the signer's private key file)");
  if (key !== undefined && signers.length !== 1)
    throw new OpTokenUsageError('--key signs as one signer: give exactly one --signer (the others sign with `switchboard op-token sign`)');
  if (keyFile !== undefined && signers.length === 0) throw new OpTokenUsageError('at least one --signer is required with --key-file');
  if (keyFile !== undefined && signers.some((s) => !/^[\x21-\x7e]{1,64}$/.test(s)))
    throw new OpTokenUsageError(`the gateway would refuse this token as malformed: opToken.signers: expected 1-64 names of 1-64 printable characters`);
  return dropUndefined({ claims, signers, key, keyFile });
}

function checkOperation(c: BoundClaims): void {
  const loadOnly = ['replicas', 'quantization', 'gpuMemoryBudgetMB', 'maxContextLength', 'evictModel'] as const;
  const flag: Record<string, string> = {
    replicas: '--replicas',
    quantization: '--quantization',
    gpuMemoryBudgetMB: '--gpu-memory-budget-mb',
    maxContextLength: '--max-context-length',
    evictModel: '--evict',
  };
  if (c.operation === 'cache-flush') {
    if (!c.scope) throw new OpTokenUsageError(`--scope is required for cache-flush (${CACHE_FLUSH_SCOPES.join(', ')})`);
    if (!(CACHE_FLUSH_SCOPES as readonly string[]).includes(c.scope))
      throw new OpTokenUsageError(`--scope must be one of ${CACHE_FLUSH_SCOPES.join(', ')}, got "${c.scope}"`);
    if (c.scope === 'model' && !c.modelId) throw new OpTokenUsageError('--model is required with --scope model');
    if (c.scope !== 'model' && c.modelId) throw new OpTokenUsageError(`--model does not go with --scope ${c.scope}`);
    if (c.scope === 'tenant' && !c.tenantId) throw new OpTokenUsageError('--tenant is required with --scope tenant');
    if (c.scope === 'tag' && !c.tag) throw new OpTokenUsageError('--tag is required with --scope tag');
    if (c.tenantId && c.scope !== 'tenant') throw new OpTokenUsageError('--tenant goes with --scope tenant only');
    if (c.tag && c.scope !== 'tag') throw new OpTokenUsageError('--tag goes with --scope tag only');
  } else if (!c.modelId) throw new OpTokenUsageError(`--model is required for ${c.operation}`);
  if (c.operation !== 'cache-flush' && (c.scope || c.tenantId || c.tag)) throw new OpTokenUsageError('--scope, --tenant and --tag go with cache-flush only');
  if (c.operation !== 'model-load') {
    for (const field of loadOnly) if (c[field] !== undefined) throw new OpTokenUsageError(`${flag[field]} goes with model-load only`);
  }
  if (c.workerId !== undefined && c.replicas !== undefined && c.replicas !== 1) throw new OpTokenUsageError('--replicas must be 1 (or absent) with --worker');
}

/** The token for parsed arguments, issued now (`nowMs`). Throws an Error when a key cannot be read. */
export function opTokenFor(args: OpTokenArgs, nowMs: number): string {
  const issuedAt = Math.floor(nowMs / 1000);
  if (args.keyFile !== undefined) return mintOpToken(readOpTokenKey(args.keyFile), { ...args.claims, issuedAt, signers: args.signers });
  const token = unsignedToken({ ...args.claims, issuedAt });
  return args.key !== undefined ? addSignature(token, args.signers[0], readPrivateKey(args.key)) : token;
}

function dropUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
