/**
 * Stateful imitations of the lifecycle APIs of the backends the daemon drives, installed as routes
 * on a FakeBackend. Paths, bodies, status codes and error shapes follow each project's
 * documentation and source (see docs/worker.md, "Model lifecycle"); what a test needs to steer
 * (a pull's layers, a router's load script, vLLM's dev mode) is plain public state.
 */

export { FakeOllama } from './fake-lifecycle-ollama';
export type { OllamaPullPlan } from './fake-lifecycle-ollama';
export { FakeLlamaRouter } from './fake-lifecycle-llama';
export type { RouterModel, RouterStep } from './fake-lifecycle-llama';
export { FakeVllm } from './fake-lifecycle-vllm';
export { FakeRunnerApi } from './fake-lifecycle-runner-api';
export type { RunnerLoadScript } from './fake-lifecycle-runner-api';
