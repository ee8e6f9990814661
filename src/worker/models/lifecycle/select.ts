import { RunnerInfo } from '../../../protocol';
import { LlamaServerAdapter } from './llama-server';
import { OllamaAdapter } from './ollama';
import { RunnerApiAdapter } from './runner-api';
import { Figures, LifecycleAdapter, RunnerChoice, RunnerType, Unsupported } from './types';
import { VllmAdapter } from './vllm';

/** What the probe found, as far as choosing an adapter goes. */
export interface Detected {
  runner?: RunnerInfo;
  /** The backend answered `GET /v1/capabilities`: it implements the runner API. */
  runnerApi: boolean;
}

export interface AdapterChoice {
  type: RunnerType;
  /** How the type was decided, for logs and `unsupported` messages. */
  how: 'forced' | 'detected' | 'unknown';
}

/**
 * `--runner` wins; otherwise a backend that serves the runner API's capabilities document is
 * driven through that API (whatever server it is), then the detected runner; anything else
 * (including a backend not probed) gets no lifecycle operation.
 */
export function chooseAdapter(forced: RunnerChoice, detected: Detected | undefined): AdapterChoice {
  if (forced !== 'auto') return { type: forced, how: 'forced' };
  if (!detected) return { type: 'openai-compatible', how: 'unknown' };
  if (detected.runnerApi) return { type: 'runner-api', how: 'detected' };
  const type = detected.runner?.type;
  if (type === 'llama-server' || type === 'vllm' || type === 'ollama') return { type, how: 'detected' };
  return { type: 'openai-compatible', how: detected.runner ? 'detected' : 'unknown' };
}

export interface AdapterOptions {
  /** vLLM: the directory (on the vLLM host) LoRA adapters are loaded from by name. */
  loraDir?: string;
}

export function createAdapter(choice: AdapterChoice, options: AdapterOptions = {}): LifecycleAdapter {
  switch (choice.type) {
    case 'runner-api':
      return new RunnerApiAdapter();
    case 'ollama':
      return new OllamaAdapter();
    case 'llama-server':
      return new LlamaServerAdapter();
    case 'vllm':
      return new VllmAdapter(options.loraDir);
    case 'openai-compatible':
      return new NoLifecycleAdapter(choice.how);
  }
}

/** A plain OpenAI-compatible server (or one not identified): nothing to drive. */
class NoLifecycleAdapter implements LifecycleAdapter {
  readonly runner = 'openai-compatible' as const;

  constructor(private readonly how: AdapterChoice['how']) {}

  load(): Promise<Figures> {
    return this.refuse();
  }

  unload(): Promise<Figures> {
    return this.refuse();
  }

  flush(): Promise<Figures> {
    return this.refuse();
  }

  private refuse(): Promise<never> {
    const why =
      this.how === 'unknown'
        ? 'the worker does not know which server its backend is (probing is off or found nothing)'
        : this.how === 'forced'
          ? 'the worker was told (--runner openai-compatible) that its backend is a plain OpenAI-compatible server'
          : 'the backend was detected as a plain OpenAI-compatible server';
    return Promise.reject(
      new Unsupported(
        `${why}, which has no API to load or unload models or flush its cache; if it is llama-server, vLLM, Ollama or a runner-API server, say so with --runner`,
      ),
    );
  }
}
