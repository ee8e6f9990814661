import { readFileSync } from 'node:fs';
import { cliInstalled, expectExit0, runClaude } from './support/agent-cli';
import { useAgentStack } from './support/agent-stack';
import { LOCAL_MODEL } from './support/scripted-backend';

/**
 * The real Claude Code CLI (`claude -p`) through the gateway: its first turn gets a `Write` tool
 * call for a file in its working directory, its next turn a final message. Translated: the only
 * worker's backend serves chat completions alone, so `/v1/messages` must be translated both ways.
 * Native: the backend speaks Messages itself, and the agent's request must reach it untouched.
 */
const PROMPT = 'Create the file notes.txt with the agreed content, then say you are done.';
const CONTENT = 'written by claude through switchboard';
const FINAL = 'Done: notes.txt holds the agreed line.';

/** `claude -p --output-format json` prints one result object. */
function result(stdout: string): Record<string, unknown> {
  const line = stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as Record<string, unknown>;
}

if (!cliInstalled('claude')) {
  throw new Error('agents/node_modules has no claude: run `node scripts/agents-install.mjs` (npm run test:agents does)');
}

describe('Claude Code through a chat-completions-only backend (translated)', () => {
  const stack = useAgentStack('chat-only');

  it('writes the file with its Write tool and ends with the final text, every turn sent to the backend as chat completions', async () => {
    const task = stack.task('notes.txt', CONTENT, FINAL);
    const run = await runClaude(stack.place(), PROMPT);

    expectExit0(run);
    // Telemetry, update checks and error reports off: nothing tried to leave the machine.
    expect(stack.trap.targets).toEqual([]);
    expect(result(run.stdout)).toEqual(expect.objectContaining({ is_error: false, result: FINAL }));
    expect(readFileSync(task.filePath, 'utf8')).toBe(CONTENT);

    const turns = stack.backend.received;
    expect(turns.map((t) => t.turn.kind)).toEqual(expect.arrayContaining(['tool', 'final']));
    expect(new Set(stack.backend.paths())).toEqual(new Set(['/v1/chat/completions']));
    const first = turns.find((t) => t.turn.kind === 'tool')!.body!;
    expect(first.model).toBe(LOCAL_MODEL);
    // The Messages tool came through as a chat function, the Anthropic-only fields did not.
    expect(first.tools).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: 'Write' }) })]));
    expect(first).not.toHaveProperty('thinking');
    expect(first).not.toHaveProperty('context_management');
  }, 180_000);
});

describe('Claude Code through a backend that serves /v1/messages itself (pass-through)', () => {
  const stack = useAgentStack('native');

  it('writes the file and ends with the final text, its own Messages requests reaching the backend intact', async () => {
    const task = stack.task('notes.txt', CONTENT, FINAL);
    const run = await runClaude(stack.place(), PROMPT);

    expectExit0(run);
    // Telemetry, update checks and error reports off: nothing tried to leave the machine.
    expect(stack.trap.targets).toEqual([]);
    expect(result(run.stdout)).toEqual(expect.objectContaining({ is_error: false, result: FINAL }));
    expect(readFileSync(task.filePath, 'utf8')).toBe(CONTENT);

    expect(new Set(stack.backend.paths())).toEqual(new Set(['/v1/messages']));
    const first = stack.backend.received.find((t) => t.turn.kind === 'tool')!.body!;
    // Only the model name is rewritten (alias → served model); Claude Code's own fields pass as sent.
    expect(first.model).toBe(LOCAL_MODEL);
    expect(first.tools).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Write', input_schema: expect.objectContaining({ type: 'object' }) })]),
    );
    expect(first.thinking).toEqual(expect.objectContaining({ type: expect.stringMatching(/^(enabled|adaptive)$/) }));
    expect(first).toHaveProperty('context_management');
    // The tool's result came back to the backend in Messages form.
    expect(stack.backend.received.some((t) => JSON.stringify(t.body?.messages).includes('"type":"tool_result"'))).toBe(true);
  }, 180_000);
});
