import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workerConfig } from '../../../src/worker/config';
import { WorkerDaemon } from '../../../src/worker/daemon';
import { CLOSE_MS, START_MS, withDeadline } from '../../support/deadline';
import { startGateway, TestGateway, TEST_SECRET } from '../../support/gateway';
import { AgentPlace, CODEX_DEFAULT_MODEL, CODEX_MODEL } from './agent-cli';
import { AgentTask } from './agent-turns';
import { AnswerTap } from './answer-tap';
import { EgressTrap } from './egress-trap';
import { BackendMode, LOCAL_MODEL, ScriptedBackend } from './scripted-backend';

/**
 * The model ids the agents request, aliased to the one local model as docs/agents.md shows:
 * a pattern for every Claude Code id (its default and ANTHROPIC_MODEL's), and the model Codex's
 * config.toml names and Codex's built-in default.
 */
export const AGENT_ALIASES = ['claude-*', CODEX_MODEL, CODEX_DEFAULT_MODEL];

export interface AgentStack {
  gateway: TestGateway;
  backend: ScriptedBackend;
  /** The agents' proxy: what they tried to reach beyond loopback. */
  trap: EgressTrap;
  /** Between the agent and the gateway: the status and headers of each answer the agent got. */
  tap: AnswerTap;
  /** The agent's working directory (its file lands here) and its home (config, sessions). */
  cwd: string;
  home: string;
  /** A task writing `<cwd>/<name>`; also set on the backend. */
  task(name: string, content: string, finalText: string): AgentTask;
  /** Where the agent runs: the gateway (through the tap), the temp dirs, the proxy variables. */
  place(): AgentPlace;
}

/**
 * Per test: a real gateway on loopback, a scripted backend in `mode`, and our worker daemon in
 * front of it, probing the backend so it advertises exactly the endpoints the backend serves.
 */
export function useAgentStack(mode: BackendMode): AgentStack {
  const stack = {} as AgentStack;
  let daemon: WorkerDaemon | undefined;
  let root = '';

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), 'switchboard-agents-'));
    stack.cwd = join(root, 'work');
    stack.home = join(root, 'home');
    for (const dir of [stack.cwd, stack.home]) mkdirSync(dir);
    stack.backend = new ScriptedBackend(mode);
    stack.trap = new EgressTrap();
    await Promise.all([stack.backend.start(), stack.trap.start()]);
    stack.gateway = await startGateway({
      HEARTBEAT_INTERVAL_SECS: '1',
      HEARTBEAT_TIMEOUT_SECS: '30',
      ROUTING_ALIASES: AGENT_ALIASES.map((id) => `${id}=${LOCAL_MODEL}`).join(','),
    });
    daemon = new WorkerDaemon(
      workerConfig({
        workerSecret: TEST_SECRET,
        proxyUrl: stack.gateway.url,
        backendUrl: stack.backend.url,
        workerName: `agents-${mode}`,
        models: [LOCAL_MODEL],
        discoverModels: false,
        reconnectMinMs: 50,
        reconnectMaxMs: 400,
        drainTimeoutMs: 2_000,
        modelsPollIntervalMs: 0,
        probe: true,
        logLevel: 'error',
      }),
    );
    const registered = new Promise<void>((resolve) => daemon!.once('registered', () => resolve()));
    daemon.start();
    await withDeadline(registered, START_MS, 'the worker did not register with the gateway');
    stack.tap = new AnswerTap(stack.gateway.url);
    await stack.tap.start();
    stack.task = (name, content, finalText) => {
      const task = { filePath: join(stack.cwd, name), content, finalText };
      stack.backend.task = task;
      return task;
    };
    stack.place = () => ({ gatewayUrl: stack.tap.url, cwd: stack.cwd, home: stack.home, env: stack.trap.env() });
  });

  afterEach(async () => {
    if (daemon) {
      void daemon.stop();
      void daemon.stop(); // the second call skips the drain wait
      await withDeadline(daemon.waitForExit(), CLOSE_MS, 'the worker daemon did not exit after stop()');
      daemon = undefined;
    }
    await stack.tap?.close();
    await stack.gateway?.close();
    await stack.backend?.close();
    await stack.trap?.close();
    rmSync(root, { recursive: true, force: true });
  });

  return stack;
}
