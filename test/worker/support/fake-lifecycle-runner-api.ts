import { FakeBackend, ProbeAnswer } from './fake-backend';
import { Json, body } from './fake-lifecycle-util';

// ---- runner API ---------------------------------------------------------------------------

export interface RunnerLoadScript {
  /** Progress reported by successive polls of the task before it ends. */
  progress: number[];
  outcome: { status: 'completed'; gpuMemoryUsedMB: number } | { status: 'failed'; error: string };
}

/**
 * A backend implementing model-runner-api §1–§4 itself: GET /v1/capabilities, POST
 * /v1/models/load (202 + task), GET /v1/models/load/{taskId}, POST /v1/models/unload, POST
 * /v1/cache/flush. Every lifecycle call must carry `token` as verifiedOpToken (else 401).
 */
export class FakeRunnerApi {
  readonly loaded = new Set<string>();
  /** Bodies of every lifecycle POST, in order. */
  readonly received: Array<{ path: string; body: Json }> = [];
  loadScript: RunnerLoadScript = { progress: [0.25, 0.75], outcome: { status: 'completed', gpuMemoryUsedMB: 38500 } };
  private readonly tasks = new Map<string, { modelId: string; polls: number; script: RunnerLoadScript }>();

  constructor(
    private readonly b: FakeBackend,
    loaded: string[],
    private readonly token: string,
  ) {
    for (const m of loaded) this.loaded.add(m);
    this.sync();
    b.routes.set('GET /v1/capabilities', () => ({
      status: 200,
      json: {
        runnerType: 'vllm-0.6.0',
        runnerId: 'runner-1',
        models: { loaded: [...this.loaded].map((id) => ({ id })), loading: [], available: [] },
        health: 'healthy',
      },
    }));
    b.routes.set('POST /v1/models/load', (req) =>
      this.guard('/v1/models/load', req.body, (r) => {
        const id = `load-${this.tasks.size + 1}`;
        this.tasks.set(id, { modelId: String(r.modelId), polls: 0, script: this.loadScript });
        return { status: 202, json: { taskId: id, status: 'loading', progress: 0.0, eta: 300 } };
      }),
    );
    b.routes.set('GET /v1/models/load/*', (req) => {
      const id = decodeURIComponent(req.path.slice('/v1/models/load/'.length));
      const task = this.tasks.get(id);
      if (!task) return { status: 404, json: { error: `unknown task ${id}` } };
      const progress = task.script.progress[task.polls++];
      if (progress !== undefined) return { status: 200, json: { taskId: id, status: 'loading', progress, eta: Math.round(300 * (1 - progress)) } };
      if (task.script.outcome.status === 'failed')
        return { status: 200, json: { taskId: id, status: 'failed', modelId: task.modelId, error: task.script.outcome.error } };
      this.loaded.add(task.modelId);
      this.sync();
      return {
        status: 200,
        json: { taskId: id, status: 'completed', modelId: task.modelId, gpuMemoryUsedMB: task.script.outcome.gpuMemoryUsedMB, loadTimeMs: 287000 },
      };
    });
    b.routes.set('POST /v1/models/unload', (req) =>
      this.guard('/v1/models/unload', req.body, (r) => {
        this.loaded.delete(String(r.modelId));
        this.sync();
        return { status: 200, json: { modelId: r.modelId, gpuMemoryFreedMB: 8200, kvCacheFlushed: true } };
      }),
    );
    b.routes.set('POST /v1/cache/flush', (req) =>
      this.guard('/v1/cache/flush', req.body, () => ({ status: 200, json: { flushed: true, entriesRemoved: 1234, memoryFreedMB: 3500 } })),
    );
  }

  private guard(path: string, text: string, answer: (r: Json) => ProbeAnswer): ProbeAnswer {
    const r = body(text);
    this.received.push({ path, body: r });
    if (r.verifiedOpToken !== this.token) return { status: 401, json: { error: 'verifiedOpToken signature invalid' } };
    return answer(r);
  }

  private sync(): void {
    this.b.models = [...this.loaded];
  }
}
