import { realpath } from 'node:fs/promises';
import { posix } from 'node:path';
import { LifecycleCommandMessage } from '../../protocol';

/**
 * The arguments of a lifecycle command are the gateway's, so they are checked before any adapter
 * uses them: a model name travels into backend URLs, file names and registries (Ollama pulls it,
 * vLLM makes a LoRA path of it, a llama-server router maps it to a file), so a name that carries
 * path syntax could make a governed "load this model" mean "read that file".
 */

export const MODEL_NAME_MAX = 256;
/**
 * Letters, digits and the punctuation real model names use: `library/llama3:8b` (Ollama),
 * `meta-llama/Llama-3.1-8B-Instruct` (Hugging Face), `hf.co/org/repo:Q4_K_M`,
 * `name@sha256:…` (a digest). No `%` (no escapes to decode), no `\`, no whitespace or controls.
 */
const MODEL_NAME_CHARS = /^[A-Za-z0-9._:@+=-]+(\/[A-Za-z0-9._:@+=-]+)*$/;
/** Opaque tokens: printable ASCII (whatever the governance format, it travels in JSON and headers). */
const PRINTABLE = /^[\x20-\x7e]+$/;
/** Scoping values (tenant, tag) only reach a runner-API backend's JSON body: any text without control characters. */
const CONTROL = /[\u0000-\u001f\u007f]/;
const QUANTIZATION = /^[A-Za-z0-9._-]{1,64}$/;
/** An M-of-N token carries one signature per signer: room for far more signers than any quorum has. */
const TOKEN_MAX = 64 * 1024;
/** Bounds far beyond any real model (a 10 M-token context, 16 TiB of GPU memory): only absurd values are refused. */
const CONTEXT_MAX = 10_000_000;
const MEMORY_MAX_MB = 16 * 1024 * 1024;

/**
 * Why `name` is not an acceptable model name, or undefined. Segments (split on `/`) keep names
 * like `org/model` legal while a segment of only dots, a leading `/`, an empty segment (`a//b`)
 * and a trailing `/` are refused: none of them names a model, all of them are path syntax.
 */
export function modelNameProblem(name: unknown, field = 'model_id'): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return `${field} is empty`;
  if (name.length > MODEL_NAME_MAX) return `${field} is longer than ${MODEL_NAME_MAX} characters`;
  if (!MODEL_NAME_CHARS.test(name)) {
    return `${field} "${shown(name)}" is not a model name: letters, digits and . _ : @ + = - in segments separated by single "/", no leading or trailing "/"`;
  }
  if (name.split('/').some((s) => /^\.+$/.test(s))) return `${field} "${shown(name)}" has a "." or ".." segment`;
  return undefined;
}

/** Why `command`'s arguments are unacceptable (before anything is asked of the backend), or undefined. */
export function lifecycleArgsProblem(command: LifecycleCommandMessage): string | undefined {
  const token = command.verified_op_token;
  if (token !== undefined && (token.length > TOKEN_MAX || !PRINTABLE.test(token))) return 'verified_op_token is not a printable ASCII token of at most 64 KiB';
  switch (command.type) {
    case 'model_load': {
      const problem =
        modelNameProblem(command.model_id) ?? (command.evict_model !== undefined ? modelNameProblem(command.evict_model, 'evict_model') : undefined);
      if (problem) return problem;
      if (command.quantization !== undefined && !QUANTIZATION.test(command.quantization))
        return 'quantization is not a quantization name (letters, digits, . _ -; at most 64)';
      if (command.max_context_length !== undefined && !inRange(command.max_context_length, CONTEXT_MAX)) return `max_context_length must be 1-${CONTEXT_MAX}`;
      if (command.gpu_memory_budget_mb !== undefined && !inRange(command.gpu_memory_budget_mb, MEMORY_MAX_MB))
        return `gpu_memory_budget_mb must be 1-${MEMORY_MAX_MB}`;
      return undefined;
    }
    case 'model_unload':
      return modelNameProblem(command.model_id);
    case 'cache_flush':
      if (command.model_id !== undefined) {
        const problem = modelNameProblem(command.model_id);
        if (problem) return problem;
      }
      for (const field of ['tenant_id', 'tag'] as const) {
        const v = command[field];
        if (v !== undefined && (v.length === 0 || v.length > MODEL_NAME_MAX || CONTROL.test(v)))
          return `${field} must be 1-${MODEL_NAME_MAX} characters without control characters`;
      }
      return undefined;
  }
}

export class LoraPathRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LoraPathRefused';
  }
}

/**
 * The path of the LoRA adapter `name` under `loraDir`, once it is certain that it stays there:
 * the name is a model name (no `..`, no leading `/`), and the directory it resolves to on disk,
 * all symlinks followed (realpath), is inside the real `loraDir`. A symlink that leads out of the
 * directory is refused, and so is an adapter that does not exist here: the daemon cannot vouch for
 * a path it cannot see (and a dangling link could be pointed elsewhere later). The path returned
 * is `loraDir/name` as configured, which is how vLLM sees it.
 */
export async function containedLoraPath(loraDir: string, name: string): Promise<string> {
  const problem = modelNameProblem(name);
  if (problem) throw new LoraPathRefused(problem);
  if (!posix.isAbsolute(loraDir)) throw new LoraPathRefused('--lora-dir is not an absolute path');
  const candidate = posix.join(loraDir, name);
  let root: string;
  let real: string;
  try {
    root = await realpath(loraDir);
  } catch (err) {
    throw new LoraPathRefused(
      `--lora-dir ${loraDir} cannot be resolved on this host (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): the worker loads only adapters it can see inside it`,
    );
  }
  try {
    real = await realpath(candidate);
  } catch (err) {
    throw new LoraPathRefused(`no LoRA adapter "${shown(name)}" in --lora-dir (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!real.startsWith(root.endsWith('/') ? root : `${root}/`)) {
    throw new LoraPathRefused(`the LoRA adapter "${shown(name)}" resolves outside --lora-dir (a symlink leads out of it)`);
  }
  return candidate;
}

function inRange(n: number, max: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= max;
}

/** A gateway-chosen value quoted in a log line or error: cut short, controls made visible. */
function shown(v: string): string {
  const cut = v.length > 80 ? `${v.slice(0, 80)}…` : v;
  return JSON.stringify(cut).slice(1, -1);
}
