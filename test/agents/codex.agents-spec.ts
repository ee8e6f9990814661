import { readFileSync } from 'node:fs';
import { AgentRun, cliInstalled, CODEX_DEFAULT_MODEL, CODEX_MODEL, expectExit0, runCodex } from './support/agent-cli';
import { AgentStack, useAgentStack } from './support/agent-stack';
import { AgentTask } from './support/agent-turns';
import { LOCAL_MODEL } from './support/scripted-backend';

/**
 * The real Codex CLI (`codex exec`) through the gateway: its first turn gets a call of its shell
 * tool that writes a file in its working directory, its next turn a final message. Translated:
 * the only worker's backend serves chat completions alone, so `/v1/responses` must be translated
 * both ways. Native: the backend speaks Responses itself, and the agent's request must reach it
 * untouched, also in the "code mode" Codex uses with its built-in default model.
 */
const PROMPT = 'Create the file notes.txt with the agreed content, then say you are done.';
const CONTENT = 'written by codex through switchboard';
const FINAL = 'Done: notes.txt holds the agreed line.';

if (!cliInstalled('codex')) {
  throw new Error('agents/node_modules has no codex: run `node scripts/agents-install.mjs` (npm run test:agents does)');
}

/** What every run must show: exit 0, the file, the final text, nothing sent beyond loopback. */
function expectTaskDone(stack: AgentStack, task: AgentTask, run: AgentRun): void {
  expectExit0(run);
  // Telemetry, update checks, plugin sync and error reports off: nothing tried to leave the machine.
  expect(stack.trap.targets).toEqual([]);
  // `codex exec` prints the final message on stdout (its progress goes to stderr).
  expect(run.stdout).toContain(FINAL);
  expect(readFileSync(task.filePath, 'utf8')).toBe(CONTENT);
}

/** Whether the gateway said it translated, per answer the agent got to its inference requests. */
function translatedHeaders(stack: AgentStack): Array<string | undefined> {
  const answers = stack.tap.inference();
  expect(answers.map((a) => a.url.split('?')[0])).toEqual(answers.map(() => '/v1/responses'));
  return answers.map((a) => a.headers['x-switchboard-translated'] as string | undefined);
}

/** The request that got the tool call: the agent's first turn. */
const firstTurn = (stack: AgentStack): Record<string, any> => stack.backend.received.find((t) => t.turn.kind !== 'final')!.body!;

describe('Codex through a chat-completions-only backend (translated)', () => {
  const stack = useAgentStack('chat-only');

  it(`with model ${CODEX_MODEL}: runs exec_command to write the file and prints the final text, every turn reaching the backend as chat completions`, async () => {
    const task = stack.task('notes.txt', CONTENT, FINAL);
    const run = await runCodex(stack.place(), PROMPT);
    expectTaskDone(stack, task, run);
    expect(new Set(translatedHeaders(stack))).toEqual(new Set(['openai-responses']));

    expect(stack.backend.received.map((t) => t.turn.kind)).toEqual(expect.arrayContaining(['tool', 'final']));
    expect(new Set(stack.backend.paths())).toEqual(new Set(['/v1/chat/completions']));
    const first = firstTurn(stack);
    expect(first.model).toBe(LOCAL_MODEL);
    // Codex's developer messages became chat messages, its shell tool a chat function.
    expect(first.messages).toEqual(expect.arrayContaining([expect.objectContaining({ role: expect.stringMatching(/^(system|developer)$/) })]));
    expect(first.tools).toEqual(
      expect.arrayContaining([expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: 'exec_command' }) })]),
    );
    expect(first).not.toHaveProperty('input');
    expect(first).not.toHaveProperty('client_metadata');
    // The command's output went back as a tool message.
    expect(stack.backend.received.some((t) => (t.body?.messages as any[]).some((m) => m?.role === 'tool'))).toBe(true);
  });
});

describe('Codex through a backend that serves /v1/responses itself (pass-through)', () => {
  const stack = useAgentStack('native');

  it(`with model ${CODEX_MODEL}: runs exec_command to write the file and prints the final text, its Responses requests reaching the backend with their own fields intact`, async () => {
    const task = stack.task('notes.txt', CONTENT, FINAL);
    const run = await runCodex(stack.place(), PROMPT);
    expectTaskDone(stack, task, run);
    expect(new Set(translatedHeaders(stack))).toEqual(new Set([undefined]));

    expect(stack.backend.received.map((t) => t.turn.kind)).toEqual(expect.arrayContaining(['tool', 'final']));
    expect(new Set(stack.backend.paths())).toEqual(new Set(['/v1/responses']));
    const first = firstTurn(stack);
    // Only the model name is rewritten (alias → served model); Codex's own fields pass as sent.
    expect(first.model).toBe(LOCAL_MODEL);
    expect(first.input).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'message', role: 'developer' })]));
    expect(first.tools).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'function', name: 'exec_command' }),
        expect.objectContaining({ type: 'namespace' }),
        expect.objectContaining({ type: 'web_search' }),
      ]),
    );
    expect(first).toEqual(
      expect.objectContaining({
        store: false,
        reasoning: expect.any(Object),
        include: expect.any(Array),
        prompt_cache_key: expect.any(String),
        client_metadata: expect.any(Object),
      }),
    );
    // The command's output came back to the backend as a Responses item.
    expect(stack.backend.received.some((t) => JSON.stringify(t.body?.input).includes('"type":"function_call_output"'))).toBe(true);
  });

  it(`with its default model (${CODEX_DEFAULT_MODEL}, code mode): runs its JavaScript exec tool to write the file, the additional_tools item and freeform tool call passing intact`, async () => {
    const task = stack.task('notes.txt', CONTENT, FINAL);
    const run = await runCodex(stack.place(), PROMPT, null);
    expectTaskDone(stack, task, run);
    expect(new Set(translatedHeaders(stack))).toEqual(new Set([undefined]));

    expect(stack.backend.received.map((t) => t.turn.kind)).toEqual(expect.arrayContaining(['custom-tool', 'final']));
    const first = firstTurn(stack);
    expect(first.model).toBe(LOCAL_MODEL);
    expect(first.input).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'additional_tools' })]));
    expect(stack.backend.received.some((t) => JSON.stringify(t.body?.input).includes('"type":"custom_tool_call_output"'))).toBe(true);
  });
});
