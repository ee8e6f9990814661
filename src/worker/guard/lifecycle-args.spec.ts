import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LifecycleCommandMessage } from '../../protocol';
import { LoraPathRefused, containedLoraPath, lifecycleArgsProblem, modelNameProblem } from './lifecycle-args';

describe('modelNameProblem', () => {
  it.each([
    'llama3',
    'llama3:8b',
    'library/llama3:8b',
    'qwen2.5:7b-instruct-q4_K_M',
    'meta-llama/Llama-3.1-8B-Instruct',
    'hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M',
    'registry.example.com:5000/team/model:v1',
    'model@sha256:0123abcd',
    'acme/sql-lora',
    'a..b',
  ])('accepts the real model name %s', (name) => {
    expect(modelNameProblem(name)).toBeUndefined();
  });

  it.each([
    ['', /empty/],
    ['/etc/passwd', /not a model name/],
    ['models/', /not a model name/],
    ['a//b', /not a model name/],
    ['../etc', /"\." or "\.\." segment/],
    ['acme/../../etc', /"\." or "\.\." segment/],
    ['acme/./x', /"\." or "\.\." segment/],
    ['..', /"\." or "\.\." segment/],
    ['a\\..\\b', /not a model name/],
    ['a\u0000b', /not a model name/],
    ['%2e%2e/etc', /not a model name/],
    ['llama 3', /not a model name/],
    ['~root/x', /not a model name/],
    ['x'.repeat(257), /longer/],
  ])('refuses %j', (name, reason) => {
    expect(modelNameProblem(name)).toMatch(reason);
  });

  it('quotes a refused name with its control characters visible', () => {
    expect(modelNameProblem('a\nb')).toContain('a\\nb');
  });
});

describe('lifecycleArgsProblem', () => {
  const load = (extra: Partial<Extract<LifecycleCommandMessage, { type: 'model_load' }>> = {}): LifecycleCommandMessage => ({
    type: 'model_load',
    task_id: 't',
    model_id: 'llama3',
    ...extra,
  });

  it('accepts sane commands', () => {
    expect(
      lifecycleArgsProblem(
        load({ quantization: 'Q4_K_M', max_context_length: 8192, gpu_memory_budget_mb: 24_000, evict_model: 'org/old', verified_op_token: 'v1.abc.def' }),
      ),
    ).toBeUndefined();
    expect(lifecycleArgsProblem({ type: 'model_unload', task_id: 't', model_id: 'library/llama3:8b' })).toBeUndefined();
    expect(lifecycleArgsProblem({ type: 'cache_flush', task_id: 't', scope: 'tenant', tenant_id: 'acme-prod' })).toBeUndefined();
    expect(lifecycleArgsProblem({ type: 'cache_flush', task_id: 't', scope: 'tag', tag: 'Q3 rollout — ü' })).toBeUndefined();
  });

  it('refuses path syntax in every model field and absurd values elsewhere', () => {
    expect(lifecycleArgsProblem(load({ model_id: '../../etc' }))).toMatch(/model_id/);
    expect(lifecycleArgsProblem(load({ evict_model: '/etc/x' }))).toMatch(/evict_model/);
    expect(lifecycleArgsProblem({ type: 'model_unload', task_id: 't', model_id: 'a/../b' })).toMatch(/model_id/);
    expect(lifecycleArgsProblem({ type: 'cache_flush', task_id: 't', scope: 'model', model_id: '/x' })).toMatch(/model_id/);
    expect(lifecycleArgsProblem({ type: 'cache_flush', task_id: 't', scope: 'tag', tag: 'a\u0000b' })).toMatch(/tag/);
    expect(lifecycleArgsProblem({ type: 'cache_flush', task_id: 't', scope: 'tag', tag: 'a\nb' })).toMatch(/tag/);
    expect(lifecycleArgsProblem({ type: 'cache_flush', task_id: 't', scope: 'tenant', tenant_id: 'x'.repeat(300) })).toMatch(/tenant_id/);
    expect(lifecycleArgsProblem(load({ quantization: '../q' }))).toMatch(/quantization/);
    expect(lifecycleArgsProblem(load({ max_context_length: 0 }))).toMatch(/max_context_length/);
    expect(lifecycleArgsProblem(load({ max_context_length: 1e12 }))).toMatch(/max_context_length/);
    expect(lifecycleArgsProblem(load({ gpu_memory_budget_mb: 2 ** 40 }))).toMatch(/gpu_memory_budget_mb/);
    expect(lifecycleArgsProblem(load({ verified_op_token: 'a\nb' }))).toMatch(/verified_op_token/);
    expect(lifecycleArgsProblem(load({ verified_op_token: 'x'.repeat(64 * 1024 + 1) }))).toMatch(/verified_op_token/);
  });
});

describe('containedLoraPath', () => {
  let root: string;
  let loras: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'lora-guard-'));
    loras = join(root, 'loras');
    mkdirSync(join(loras, 'acme', 'sql'), { recursive: true });
    mkdirSync(join(root, 'secret'));
    symlinkSync(join(root, 'secret'), join(loras, 'escape'));
    symlinkSync(join(loras, 'acme', 'sql'), join(loras, 'alias'));
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('gives the configured path of an adapter inside the directory, also through a symlink that stays inside', async () => {
    await expect(containedLoraPath(loras, 'acme/sql')).resolves.toBe(`${loras}/acme/sql`);
    await expect(containedLoraPath(loras, 'alias')).resolves.toBe(`${loras}/alias`);
  });

  it('refuses a symlink that leads out, traversal, a missing adapter and a directory it cannot see', async () => {
    await expect(containedLoraPath(loras, 'escape')).rejects.toThrow(/resolves outside --lora-dir/);
    await expect(containedLoraPath(loras, '../secret')).rejects.toThrow(LoraPathRefused);
    await expect(containedLoraPath(loras, '/etc')).rejects.toThrow(LoraPathRefused);
    await expect(containedLoraPath(loras, 'nope')).rejects.toThrow(/no LoRA adapter "nope"/);
    await expect(containedLoraPath(join(root, 'absent'), 'acme/sql')).rejects.toThrow(/cannot be resolved on this host/);
    // A sibling directory whose name starts with the same letters is not inside.
    mkdirSync(join(root, 'loras-evil'));
    symlinkSync(join(root, 'loras-evil'), join(loras, 'sib'));
    await expect(containedLoraPath(loras, 'sib')).rejects.toThrow(/resolves outside/);
  });
});
