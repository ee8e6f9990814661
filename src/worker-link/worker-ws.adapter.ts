import { WsAdapter } from '@nestjs/platform-ws';

/**
 * The worker gateway reads frames itself (one JSON.parse, typed validation). The stock adapter
 * would parse every frame a second time looking for `{event, data}` handlers, so it is skipped
 * when a gateway declares no message handlers.
 */
export class WorkerWsAdapter extends WsAdapter {
  override bindMessageHandlers(client: any, handlers: any[], transform: (data: any) => any): void {
    if (handlers.length === 0) return;
    super.bindMessageHandlers(client, handlers, transform);
  }
}
