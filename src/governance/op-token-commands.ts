import { writeFileSync } from 'node:fs';
import { readGovernanceConfig } from '../config/sections/governance';
import { decodeOpToken, DecodedOpToken, MalformedOpToken, OpTokenClaims, SIGNER_NAME } from './op-token';
import { OP_TOKEN_HELP, oneOf, opTokenFor, OpTokenUsageError, parseOpTokenArgs, readOptions } from './op-token-cli';
import { addSignature, checkSignatures, generateSignerKey, parsePublicKey, readPrivateKey } from './op-token-ed25519';
import { OP_TOKEN_WINDOW_MS } from './op-token-verifier';

/** What the commands read and write (the real process, or a test's). */
export interface OpTokenIo {
  env: Record<string, string | undefined>;
  out: (text: string) => void;
  err: (text: string) => void;
  /** The token when none is given as an argument (stdin). */
  readStdin: () => string;
  nowMs: number;
}

/** `switchboard op-token [keygen|sign|verify] ...`; resolves with the exit status (2: usage, 1: failure). */
export function runOpToken(args: readonly string[], io: OpTokenIo): number {
  if (args.some((a) => a === '--help' || a === '-h')) {
    io.out(OP_TOKEN_HELP);
    return 0;
  }
  const [command, ...rest] = args;
  try {
    switch (command) {
      case 'keygen':
        return keygen(rest, io);
      case 'sign':
        return signCommand(rest, io);
      case 'verify':
        return verifyCommand(rest, io);
      default:
        return create(args, io);
    }
  } catch (e) {
    if (e instanceof OpTokenUsageError) {
      io.err(`switchboard op-token: ${e.message}\nRun 'switchboard op-token --help' for usage.\n`);
      return 2;
    }
    io.err(`switchboard op-token: ${(e as Error).message}\n`);
    return 1;
  }
}

function create(args: readonly string[], io: OpTokenIo): number {
  const parsed = parseOpTokenArgs(args, io.env);
  let token: string;
  try {
    token = opTokenFor(parsed, io.nowMs);
  } catch (e) {
    throw new Error(`key file ${(e as Error).message}`);
  }
  io.out(`${token}\n`);
  return 0;
}

/** Writes a new private key (mode 0600, never over an existing file) and prints the config line of its public key. */
function keygen(args: readonly string[], io: OpTokenIo): number {
  const values = readOptions(args, new Set(['--signer', '--out']));
  const signer = oneOf(values, '--signer');
  if (!signer) throw new OpTokenUsageError('--signer is required (the name the gateway knows this signer by)');
  if (!/^[\x21-\x2b\x2d-\x7e]{1,64}$/.test(signer)) throw new OpTokenUsageError('--signer: 1-64 printable characters without spaces or commas');
  const out = oneOf(values, '--out') ?? `${signer}.key`;
  const { privatePem, publicKey } = generateSignerKey();
  try {
    writeFileSync(out, privatePem, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    throw new Error(`cannot write the private key to "${out}": ${(e as Error).message}`);
  }
  io.err(`private key of ${signer} written to ${out} (mode 0600): keep it to yourself. Add this line under governance.signers:\n`);
  io.out(`${signer}: ${publicKey}\n`);
  return 0;
}

/** Adds one signer's signature to a token, after showing what it authorises. */
function signCommand(args: readonly string[], io: OpTokenIo): number {
  const positional: string[] = [];
  const values = readOptions(args, new Set(['--key', '--signer', '--token']), positional);
  const keyFile = oneOf(values, '--key');
  const signer = oneOf(values, '--signer');
  if (!keyFile) throw new OpTokenUsageError('--key is required (your private key file)');
  if (!signer) throw new OpTokenUsageError('--signer is required (your name in governance.signers)');
  if (!SIGNER_NAME.test(signer)) throw new OpTokenUsageError('--signer: 1-64 printable characters without spaces');
  const token = tokenArgument(values, positional, io);
  const decoded = decode(token);
  const age = io.nowMs - decoded.claims.issuedAt * 1000;
  if (Math.abs(age) > OP_TOKEN_WINDOW_MS)
    throw new Error(`the token was issued ${Math.round(age / 1000)} s ago: outside the ±${OP_TOKEN_WINDOW_MS / 1000} s the gateway accepts; create a new one`);
  const signed = addSignature(token, signer, readPrivateKey(keyFile));
  io.err(`${signer} signs: ${describe(decoded.claims)}\n`);
  io.out(`${signed}\n`);
  return 0;
}

/** Checks a token as the gateway would (but its nonce, which only the gateway knows), and prints what it authorises. */
function verifyCommand(args: readonly string[], io: OpTokenIo): number {
  const positional: string[] = [];
  const values = readOptions(args, new Set(['--signers-file', '--required-signers', '--token']), positional);
  const signersFile = oneOf(values, '--signers-file') ?? io.env.GOVERNANCE_SIGNERS_FILE;
  if (!signersFile) throw new OpTokenUsageError('--signers-file is required (or GOVERNANCE_SIGNERS_FILE)');
  const required = oneOf(values, '--required-signers') ?? io.env.GOVERNANCE_REQUIRED_SIGNERS;
  const problems: string[] = [];
  const config = readGovernanceConfig(
    { GOVERNANCE_SIGNERS_FILE: signersFile, ...(required ? { GOVERNANCE_REQUIRED_SIGNERS: required } : {}) },
    undefined,
    problems,
  );
  if (problems.length) throw new OpTokenUsageError(problems[0]);
  const decoded = decode(tokenArgument(values, positional, io));
  if (decoded.format !== 'ed25519') throw new Error('a shared-key (HMAC) token: only the holder of that key can check it');
  const keys = new Map(Object.entries(config.signerKeys).map(([name, key]) => [name, parsePublicKey(key)]));
  const { valid, invalid, unknown } = checkSignatures(decoded, keys);
  const skewMs = io.nowMs - decoded.claims.issuedAt * 1000;
  const failures: string[] = [];
  if (invalid.length) failures.push(`signature of ${invalid.join(', ')} does not verify`);
  if (unknown.length) failures.push(`unknown signer(s): ${unknown.join(', ')}`);
  if (Math.abs(skewMs) > OP_TOKEN_WINDOW_MS)
    failures.push(skewMs > 0 ? `expired ${Math.round((skewMs - OP_TOKEN_WINDOW_MS) / 1000)} s ago` : 'issued in the future, beyond the clock skew allowed');
  if (valid.length < config.requiredSigners) failures.push(`${valid.length} valid signature(s), ${config.requiredSigners} needed`);
  const until = new Date(decoded.claims.issuedAt * 1000 + OP_TOKEN_WINDOW_MS).toISOString();
  io.out(
    [
      `authorises: ${describe(decoded.claims)}`,
      `issued:     ${new Date(decoded.claims.issuedAt * 1000).toISOString()} (usable until ${until}, once)`,
      `nonce:      ${decoded.claims.nonce}`,
      `signed by:  ${valid.join(', ') || 'nobody'} (${valid.length} of ${config.requiredSigners} required; signers: ${config.signers.join(', ')})`,
      failures.length ? `INVALID:    ${failures.join('; ')}` : 'valid:      yes (the gateway also checks that the nonce was never used)',
    ].join('\n') + '\n',
  );
  return failures.length ? 1 : 0;
}

function tokenArgument(values: Map<string, string[]>, positional: string[], io: OpTokenIo): string {
  const given = [...(values.get('--token') ?? []), ...positional];
  if (given.length > 1) throw new OpTokenUsageError('one token at a time');
  const token = (given[0] ?? io.readStdin()).trim();
  if (!token) throw new OpTokenUsageError('no token: give it as an argument or on stdin');
  return token;
}

function decode(token: string): DecodedOpToken {
  try {
    return decodeOpToken(token);
  } catch (e) {
    if (e instanceof MalformedOpToken) throw new Error(`the token is malformed: ${e.message}`);
    throw e;
  }
}

/** `model-load of 'm' (workerId 'w-1', evictModel 'old')`. */
export function describe(c: OpTokenClaims): string {
  const what = `${c.operation}${c.modelId !== undefined ? ` of '${c.modelId}'` : ''}${c.scope !== undefined ? ` (scope ${c.scope})` : ''}`;
  const bound = (['evictModel', 'pool', 'workerId', 'replicas', 'quantization', 'gpuMemoryBudgetMB', 'maxContextLength', 'tenantId', 'tag'] as const)
    .filter((f) => c[f] !== undefined)
    .map((f) => `${f} ${JSON.stringify(c[f])}`);
  return `${what}${bound.length ? `, ${bound.join(', ')}` : ''}; nothing else (every other field absent)`;
}
