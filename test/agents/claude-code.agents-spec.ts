import { readFileSync } from 'node:fs';
import { AgentRun, CLAUDE_DEFAULT_MODEL, CLAUDE_MODEL, cliInstalled, expectExit0, runClaude } from './support/agent-cli';
import { AgentStack, useAgentStack } from './support/agent-stack';
import { AgentTask } from './support/agent-turns';
import { LOCAL_MODEL } from './support/scripted-backend';

/**
 * The real Claude Code CLI (`claude -p`) through the gateway: its first turn gets a `Write` tool
 * call for a file in its working directory, its next turn a final message. Translated: the only
 * worker's backend serves chat completions alone, so `/v1/messages` must be translated both ways.
 * Native: the backend speaks Messages itself, and the agent's request must reach it untouched.
 * Both with the CLI's built-in default model (its newest request shape) and with ANTHROPIC_MODEL.
 */
const PROMPT = 'Create the file notes.txt with the agreed content, then say you are done.';
const CONTENT = 'written by claude through switchboard';
const FINAL = 'Done: notes.txt holds the agreed line.';

/** The models asked for: undefined = ANTHROPIC_MODEL unset (the CLI sends its default). */
const MODELS: Array<[string, string | undefined]> = [
  [`its default model (${CLAUDE_DEFAULT_MODEL})`, undefined],
  [`ANTHROPIC_MODEL=${CLAUDE_MODEL}`, CLAUDE_MODEL],
];

if (!cliInstalled('claude')) {
  throw new Error('agents/node_modules has no claude: run `node scripts/agents-install.mjs` (npm run test:agents does)');
}

/** What every run must show: exit 0, the file, the final text, nothing sent beyond loopback. */
function expectTaskDone(stack: AgentStack, task: AgentTask, run: AgentRun): void {
  expectExit0(run);
  // Telemetry, update checks and error reports off: nothing tried to leave the machine.
  expect(stack.trap.targets).toEqual([]);
  // `claude -p --output-format json` prints one result object.
  const result = JSON.parse(run.stdout.trim().split('\n').pop() ?? '') as Record<string, unknown>;
  expect(result).toEqual(expect.objectContaining({ is_error: false, result: FINAL }));
  expect(readFileSync(task.filePath, 'utf8')).toBe(CONTENT);
  expect(stack.backend.received.map((t) => t.turn.kind)).toEqual(expect.arrayContaining(['tool', 'final']));
}

/** Whether the gateway said it translated, per answer the agent got to its inference requests. */
function translatedHeaders(stack: AgentStack): Array<string | undefined> {
  const answers = stack.tap.inference();
  expect(answers.map((a) => a.url.split('?')[0])).toEqual(answers.map(() => '/v1/messages'));
  return answers.map((a) => a.headers['x-switchboard-translated'] as string | undefined);
}

/** The request that got the tool call: the agent's first turn. */
const firstTurn = (stack: AgentStack): Record<string, any> => stack.backend.received.find((t) => t.turn.kind === 'tool')!.body!;

describe('Claude Code through a chat-completions-only backend (translated)', () => {
  const stack = useAgentStack('chat-only');

  it.each(MODELS)(
    'with %s: writes the file with its Write tool and ends with the final text, every turn reaching the backend as chat completions',
    async (_, model) => {
      const task = stack.task('notes.txt', CONTENT, FINAL);
      const run = await runClaude(stack.place(), PROMPT, model);
      expectTaskDone(stack, task, run);
      expect(new Set(translatedHeaders(stack))).toEqual(new Set(['anthropic-messages']));

      expect(new Set(stack.backend.paths())).toEqual(new Set(['/v1/chat/completions']));
      const first = firstTurn(stack);
      expect(first.model).toBe(LOCAL_MODEL);
      // The Messages tool came through as a chat function, the Anthropic-only fields did not.
      expect(first.tools).toEqual(
        expect.arrayContaining([expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: 'Write' }) })]),
      );
      expect(first).not.toHaveProperty('thinking');
      expect(first).not.toHaveProperty('context_management');
      // The tool's result went back as a chat tool message.
      expect(stack.backend.received.some((t) => (t.body?.messages as any[]).some((m) => m?.role === 'tool'))).toBe(true);
    },
  );
});

describe('Claude Code through a backend that serves /v1/messages itself (pass-through)', () => {
  const stack = useAgentStack('native');

  it(`with its default model (${CLAUDE_DEFAULT_MODEL}): writes the file and ends with the final text, its Messages requests reaching the backend with their own fields intact`, async () => {
    const task = stack.task('notes.txt', CONTENT, FINAL);
    const run = await runClaude(stack.place(), PROMPT);
    expectTaskDone(stack, task, run);
    expect(new Set(translatedHeaders(stack))).toEqual(new Set([undefined]));

    expect(new Set(stack.backend.paths())).toEqual(new Set(['/v1/messages']));
    const first = firstTurn(stack);
    // Only the model name is rewritten (alias → served model); Claude Code's own fields pass as sent.
    expect(first.model).toBe(LOCAL_MODEL);
    expect(first.tools).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Write', input_schema: expect.objectContaining({ type: 'object' }) })]),
    );
    expect(first.tools).toEqual(expect.arrayContaining([expect.objectContaining({ defer_loading: true })]));
    expect(first.messages).toEqual(expect.arrayContaining([expect.objectContaining({ role: 'system' })]));
    expect(first).toEqual(
      expect.objectContaining({
        thinking: expect.objectContaining({ type: 'adaptive' }),
        context_management: expect.any(Object),
        output_config: expect.any(Object),
      }),
    );
    // The tool's result came back to the backend in Messages form.
    expect(stack.backend.received.some((t) => JSON.stringify(t.body?.messages).includes('"type":"tool_result"'))).toBe(true);
  });
});
