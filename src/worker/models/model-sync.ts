import { Features, LifecycleCommandMessage, WorkerToServerMessage } from '../../protocol';
import { Logger } from '../logger';
import { LifecycleDispatcher } from './lifecycle/dispatcher';
import { ModelCatalog } from './model-catalog';

/** What the models part needs from a gateway link (the link's session has this shape). */
export interface ModelsChannel {
  readonly open: boolean;
  readonly draining: boolean;
  readonly features: ReadonlySet<string>;
  advertisedEndpoints?: string[];
  readonly operations: { readonly signal: AbortSignal };
  send(message: WorkerToServerMessage): boolean;
  /** A timer that ends with the link (the clock behind it is the daemon's). */
  setTimer(name: 'poll', fn: () => void, ms: number): void;
}

export interface ModelSyncOptions {
  priority?: number;
  /** Re-read the backend's list this often (0 = only on models_refresh). Only with discovered models. */
  modelsPollIntervalMs: number;
  /** The link a lifecycle operation reports to when it changed the models (it may have reconnected since). */
  current: () => ModelsChannel | undefined;
  load: () => number;
  stopping: () => boolean;
  /** Aborted on stop. */
  signal: AbortSignal;
  log: Logger;
}

/**
 * Keeps the gateway's view of this worker's models current: models_refresh, polling the backend,
 * and the governed lifecycle commands (load, unload, cache flush) that change what it serves.
 */
export class ModelSync {
  constructor(
    private readonly catalog: ModelCatalog,
    private readonly dispatcher: LifecycleDispatcher,
    private readonly options: ModelSyncOptions,
  ) {}

  /**
   * models_refresh always asks the backend, with an explicit --models list too (that list is only
   * what the worker registers with at startup). If the backend cannot answer, the current list is
   * sent again; the catalog has logged why.
   */
  async refresh(channel: ModelsChannel, reason?: string): Promise<void> {
    this.options.log.info('gateway asked for the model list', { reason });
    await this.catalog.reload('backend model list differs from the current one; using it', true);
    this.sendUpdate(channel);
  }

  sendUpdate(channel: ModelsChannel): void {
    if (this.options.stopping()) return; // the shutdown's empty list must stand
    const probed = this.catalog.probe;
    if (probed?.endpoints) channel.advertisedEndpoints = probed.endpoints;
    const models = this.catalog.models;
    channel.send({
      type: 'models_update',
      models,
      current_load: this.options.load(),
      capabilities: this.catalog.capabilitiesFor(models),
      endpoints: probed?.endpoints,
      priority: this.options.priority,
    });
  }

  schedulePoll(channel: ModelsChannel): void {
    channel.setTimer(
      'poll',
      async () => {
        if (!channel.open) return;
        if (!channel.draining && !this.options.stopping()) {
          if (await this.catalog.pollChanged(() => channel.open)) this.sendUpdate(channel);
        }
        if (channel.open) this.schedulePoll(channel);
      },
      this.options.modelsPollIntervalMs,
    );
  }

  /** Runs in the background: request relaying goes on while a model loads. */
  lifecycleCommand(channel: ModelsChannel, command: LifecycleCommandMessage): void {
    const { log } = this.options;
    if (!channel.features.has(Features.MODEL_LIFECYCLE)) {
      // The gateway did not accept the feature, so it expects no lifecycle_status either.
      log.warn('gateway sent a lifecycle command without negotiating model_lifecycle; ignored', { type: command.type, task_id: command.task_id });
      return;
    }
    if (this.options.stopping()) {
      channel.send({ type: 'lifecycle_status', task_id: command.task_id, status: 'failed', error: 'the worker is stopping' });
      return;
    }
    const link = {
      send: (message: WorkerToServerMessage) => void channel.send(message),
      signal: AbortSignal.any([channel.operations.signal, this.options.signal]),
      modelsChanged: () => this.refreshAfterLifecycle(),
    };
    void this.dispatcher.handle(command, link);
  }

  /** A load or unload changed what the backend serves: tell the gateway (routing follows this list). */
  private async refreshAfterLifecycle(): Promise<void> {
    await this.catalog.reload('backend model list changed by a lifecycle operation', false);
    const channel = this.options.current();
    if (channel?.open) this.sendUpdate(channel);
  }
}
