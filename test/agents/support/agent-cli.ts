import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * Runs the real agent CLIs (installed into agents/ by scripts/agents-install.mjs) headless, each
 * in a temp working directory with a temp home, its telemetry, update checks and other
 * nonessential traffic switched off, and only loopback to talk to: the gateway.
 */

const AGENTS_BIN = resolve(__dirname, '../../../agents/node_modules/.bin');

/** The bearer token the agents send; the test gateway requires no client keys, any value passes. */
export const AGENT_TOKEN = 'sk-agents-test-token';

/** Model ids the agents are set to request (the gateway's aliases map them to the local model). */
export const CLAUDE_MODEL = 'claude-sonnet-4-5';
/**
 * Claude Code 2.1.332's built-in default, requested when ANTHROPIC_MODEL is unset; with it the CLI
 * sends its newest request shape (adaptive thinking, `output_config`, `system` entries in `messages`).
 */
export const CLAUDE_DEFAULT_MODEL = 'claude-opus-5-5';
export const CLAUDE_SMALL_MODEL = 'claude-haiku-4-5';
/**
 * Codex 0.171.0's built-in default, requested when config.toml names no model. With it Codex
 * switches to "code mode" (its tools in an `additional_tools` input item, a freeform JavaScript
 * `exec` tool) that a local model behind chat completions cannot drive; docs/agents.md therefore
 * has config.toml name a model, as the test does.
 */
export const CODEX_DEFAULT_MODEL = 'gpt-6.2-sol';
/** The model config.toml names: Codex sends its classic function tools (`exec_command`) with it. */
export const CODEX_MODEL = 'gpt-5.2-codex';

/** A CLI that hangs (a retry loop, a blocked network call) fails the test after this long. */
const RUN_TIMEOUT_MS = 60_000;

export interface AgentRun {
  /** Exit code (null when killed). */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export function cliPath(name: 'claude' | 'codex'): string {
  return join(AGENTS_BIN, name);
}

/** Where and against what an agent runs. */
export interface AgentPlace {
  gatewayUrl: string;
  /** Its working directory and its home (config, sessions), both temp dirs. */
  cwd: string;
  home: string;
  /** Added to its environment (the egress trap's proxy variables). */
  env: Record<string, string>;
}

export function cliInstalled(name: 'claude' | 'codex'): boolean {
  return existsSync(cliPath(name));
}

/** Only what a shell needs: nothing of the developer's own agent settings or keys leaks in. */
function baseEnv(home: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', TERM: 'dumb', NO_COLOR: '1' };
}

/** The variables docs/agents.md documents for Claude Code through the gateway. */
export function claudeEnv(gatewayUrl: string, home: string, model?: string): Record<string, string> {
  return {
    ...(model ? { ANTHROPIC_MODEL: model } : {}),
    ...baseEnv(home),
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    ANTHROPIC_BASE_URL: gatewayUrl,
    ANTHROPIC_AUTH_TOKEN: AGENT_TOKEN,
    ANTHROPIC_SMALL_FAST_MODEL: CLAUDE_SMALL_MODEL,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: CLAUDE_SMALL_MODEL,
    // Offline: no telemetry, error reports, update checks or other calls beyond the model's turns.
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_BUG_COMMAND: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_NON_ESSENTIAL_MODEL_CALLS: '1',
  };
}

/**
 * Runs `claude -p` with the Write tool allowed (root may not use --dangerously-skip-permissions),
 * asking for `model` through ANTHROPIC_MODEL, or for the CLI's built-in default when unset.
 */
export function runClaude(place: AgentPlace, prompt: string, model?: string): Promise<AgentRun> {
  const args = ['-p', prompt, '--output-format', 'json', '--allowedTools', 'Write'];
  return run(cliPath('claude'), args, place.cwd, { ...claudeEnv(place.gatewayUrl, place.home, model), ...place.env });
}

/** The config.toml docs/agents.md documents for Codex through the gateway. */
export function codexConfig(gatewayUrl: string, model: string | null = CODEX_MODEL): string {
  return [
    ...(model ? [`model = "${model}"`] : []),
    'model_provider = "switchboard"',
    'check_for_update_on_startup = false',
    '',
    '[model_providers.switchboard]',
    'name = "Switchboard"',
    `base_url = "${gatewayUrl}/v1"`,
    'env_key = "SWITCHBOARD_API_KEY"',
    'wire_api = "responses"',
    // A failed turn fails the run at once instead of after Codex's reconnect loop.
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    // Plugin/marketplace sync and ChatGPT apps reach out at start (github.com, chatgpt.com):
    // nothing an agent behind the gateway needs.
    '[features]',
    'plugins = false',
    'remote_plugin = false',
    'apps = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
    '[otel]',
    'exporter = "none"',
    '',
  ].join('\n');
}

/**
 * Runs `codex exec` with approvals and sandbox off (the test's temp dir is the sandbox), its
 * config.toml naming `model` (null: none, so Codex asks for its built-in default).
 */
export function runCodex(place: AgentPlace, prompt: string, model: string | null = CODEX_MODEL): Promise<AgentRun> {
  const codexHome = join(place.home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(join(codexHome, 'config.toml'), codexConfig(place.gatewayUrl, model));
  const env = { ...baseEnv(place.home), CODEX_HOME: codexHome, SWITCHBOARD_API_KEY: AGENT_TOKEN, ...place.env };
  const args = ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', '--color', 'never', '--ephemeral', prompt];
  return run(cliPath('codex'), args, place.cwd, env);
}

function run(bin: string, args: string[], cwd: string, env: Record<string, string>): Promise<AgentRun> {
  return new Promise((done, fail) => {
    // stdin closed: `codex exec` would otherwise wait to read more prompt from it.
    const child = spawn(bin, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, RUN_TIMEOUT_MS);
    child.on('error', (e) => {
      clearTimeout(timer);
      fail(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout, stderr, timedOut });
    });
  });
}

/** The run, readable in a failed assertion. */
export function describeRun(run: AgentRun): string {
  return `exit ${run.code}${run.signal ? ` (${run.signal})` : ''}${run.timedOut ? ' after the timeout' : ''}\n--- stdout ---\n${run.stdout.slice(-4000)}\n--- stderr ---\n${run.stderr.slice(-4000)}`;
}

/** Fails with everything the CLI printed unless it exited 0 on its own. */
export function expectExit0(run: AgentRun): void {
  if (run.code !== 0 || run.timedOut) throw new Error(`the agent did not exit 0: ${describeRun(run)}`);
}
