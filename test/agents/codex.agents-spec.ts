import { readFileSync } from 'node:fs';
import { cliInstalled, expectExit0, runCodex } from './support/agent-cli';
import { useAgentStack } from './support/agent-stack';
import { LOCAL_MODEL } from './support/scripted-backend';

/**
 * The real Codex CLI (`codex exec`) through the gateway: its first turn gets a call of its shell
 * function tool (`exec_command`) that writes a file in its working directory, its next turn a
 * final message. Translated: the only worker's backend serves chat completions alone, so
 * `/v1/responses` must be translated both ways. Native: the backend speaks Responses itself, and
 * the agent's request must reach it untouched.
 */
const PROMPT = 'Create the file notes.txt with the agreed content, then say you are done.';
const CONTENT = 'written by codex through switchboard';
const FINAL = 'Done: notes.txt holds the agreed line.';

if (!cliInstalled('codex')) {
  throw new Error('agents/node_modules has no codex: run `node scripts/agents-install.mjs` (npm run test:agents does)');
}

describe('Codex through a chat-completions-only backend (translated)', () => {
  const stack = useAgentStack('chat-only');

  it('runs its shell tool to write the file and prints the final text, every turn sent to the backend as chat completions', async () => {
    const task = stack.task('notes.txt', CONTENT, FINAL);
    const run = await runCodex(stack.place(), PROMPT);

    expectExit0(run);
    // Telemetry, update checks and error reports off: nothing tried to leave the machine.
    expect(stack.trap.targets).toEqual([]);
    expect(run.stdout).toContain(FINAL);
    expect(readFileSync(task.filePath, 'utf8')).toBe(CONTENT);

    const turns = stack.backend.received;
    expect(turns.map((t) => t.turn.kind)).toEqual(expect.arrayContaining(['tool', 'final']));
    expect(new Set(stack.backend.paths())).toEqual(new Set(['/v1/chat/completions']));
    const first = turns.find((t) => t.turn.kind === 'tool')!.body!;
    expect(first.model).toBe(LOCAL_MODEL);
    // Codex's developer messages became chat messages; its shell tool a chat function.
    expect(first.messages).toEqual(expect.arrayContaining([expect.objectContaining({ role: expect.stringMatching(/^(system|developer)$/) })]));
    expect(first.tools).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: 'exec_command' }) })]),
    );
    expect(first).not.toHaveProperty('input');
    expect(first).not.toHaveProperty('client_metadata');
    // The command's output went back as a tool message.
    expect(turns.some((t) => Array.isArray(t.body?.messages) && t.body.messages.some((m: any) => m?.role === 'tool'))).toBe(true);
  }, 180_000);
});

describe('Codex through a backend that serves /v1/responses itself (pass-through)', () => {
  const stack = useAgentStack('native');

  it('runs its shell tool to write the file and prints the final text, its own Responses requests reaching the backend intact', async () => {
    const task = stack.task('notes.txt', CONTENT, FINAL);
    const run = await runCodex(stack.place(), PROMPT);

    expectExit0(run);
    // Telemetry, update checks and error reports off: nothing tried to leave the machine.
    expect(stack.trap.targets).toEqual([]);
    expect(run.stdout).toContain(FINAL);
    expect(readFileSync(task.filePath, 'utf8')).toBe(CONTENT);

    expect(new Set(stack.backend.paths())).toEqual(new Set(['/v1/responses']));
    const first = stack.backend.received.find((t) => t.turn.kind === 'tool')!.body!;
    // Only the model name is rewritten (alias → served model); Codex's own fields pass as sent.
    expect(first.model).toBe(LOCAL_MODEL);
    expect(first.input).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'message', role: 'developer' })]));
    expect(first.tools).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'function', name: 'exec_command' })]));
    expect(first).toEqual(expect.objectContaining({ store: false, prompt_cache_key: expect.any(String), client_metadata: expect.any(Object) }));
    // The command's output came back to the backend as a Responses item.
    expect(stack.backend.received.some((t) => JSON.stringify(t.body?.input).includes('"type":"function_call_output"'))).toBe(true);
  }, 180_000);
});
