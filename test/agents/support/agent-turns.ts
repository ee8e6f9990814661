/**
 * What the scripted backend answers an agent, decided by the conversation so far: no tool result
 * yet → one tool call that writes the task's file with the tool the agent offered; a tool result
 * in the conversation → the task's final text. Pure: the server (scripted-backend.ts) renders the
 * decision in the dialect that was asked.
 */

/** The file the agent is to write and the text it is to end with. */
export interface AgentTask {
  /** Absolute path of the file to write (inside the agent's temp working directory). */
  filePath: string;
  /** Its expected content: plain words, no quotes, so it survives a shell command unquoted-safe. */
  content: string;
  finalText: string;
}

export type Turn =
  | { kind: 'tool'; name: string; args: Record<string, unknown> }
  /** A freeform (`custom`) tool's call: its input is text, not JSON arguments (Responses only). */
  | { kind: 'custom-tool'; name: string; input: string }
  | { kind: 'final'; text: string };

/** The turns chat completions and Messages can carry (no freeform tools there). */
export type FunctionTurn = Exclude<Turn, { kind: 'custom-tool' }>;

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/**
 * The agent's file-writing tools, by the name each CLI gives it, with the arguments that write
 * the task's file: Claude Code's `Write` tool, Codex's shell tool (`exec_command` takes one shell
 * string; the older `shell` takes an argv).
 */
function toolCall(offered: Set<string>, task: AgentTask, freeform: boolean): Turn | undefined {
  const shellLine = `printf '%s' '${task.content}' > '${task.filePath}'`;
  if (offered.has('Write')) return { kind: 'tool', name: 'Write', args: { file_path: task.filePath, content: task.content } };
  if (offered.has('exec_command')) return { kind: 'tool', name: 'exec_command', args: { cmd: shellLine } };
  if (offered.has('shell')) return { kind: 'tool', name: 'shell', args: { command: ['bash', '-lc', shellLine] } };
  // Codex's code mode: one freeform `exec` tool taking JavaScript that calls the other tools.
  if (freeform && offered.has('exec')) return { kind: 'custom-tool', name: 'exec', input: `await tools.exec_command({ cmd: ${JSON.stringify(shellLine)} });` };
  return undefined;
}

/**
 * Names of the tools a body offers, in any of the three dialects' shapes, including those inside
 * Responses `namespace` tools and Codex's `additional_tools` input items (code mode).
 */
function offeredTools(body: Json): Set<string> {
  const names = new Set<string>();
  const collect = (tools: unknown) => {
    for (const tool of list(tools)) {
      if (!isObject(tool)) continue;
      if (tool.type === 'namespace') collect(tool.tools);
      // chat completions: {type: 'function', function: {name}}; Messages and Responses: {name}.
      const name = isObject(tool.function) ? tool.function.name : tool.name;
      if (typeof name === 'string') names.add(name);
    }
  };
  collect(body.tools);
  for (const item of list(body.input)) if (isObject(item) && item.type === 'additional_tools') collect(item.tools);
  return names;
}

function decide(body: Json, hasToolResult: boolean, task: AgentTask, freeform = false): Turn {
  if (hasToolResult) return { kind: 'final', text: task.finalText };
  // A request offering none of the writing tools is a side call (a title, a summary): plain text.
  return toolCall(offeredTools(body), task, freeform) ?? { kind: 'final', text: task.finalText };
}

/** Chat completions: a `tool` message carries the result of the call. */
export function chatTurn(body: Json, task: AgentTask): FunctionTurn {
  return <FunctionTurn>decide(
    body,
    list(body.messages).some((m) => isObject(m) && m.role === 'tool'),
    task,
  );
}

/** Anthropic Messages: a user message with a `tool_result` block. */
export function messagesTurn(body: Json, task: AgentTask): FunctionTurn {
  const hasResult = list(body.messages).some((m) => isObject(m) && m.role === 'user' && list(m.content).some((b) => isObject(b) && b.type === 'tool_result'));
  return <FunctionTurn>decide(body, hasResult, task);
}

/** Responses: a `function_call_output` (or, for a freeform tool, `custom_tool_call_output`) input item. */
export function responsesTurn(body: Json, task: AgentTask): Turn {
  return decide(
    body,
    list(body.input).some((item) => isObject(item) && (item.type === 'function_call_output' || item.type === 'custom_tool_call_output')),
    task,
    true,
  );
}
