import { WsAdapter } from '@nestjs/platform-ws';

/**
 * The worker gateway reads frames itself (one JSON.parse, typed validation). The stock adapter
 * would parse every frame a second time looking for `{event, data}` handlers, so it is skipped
 * when a gateway declares no message handlers.
 */
export class WorkerWsAdapter extends WsAdapter {
  // The signature is WsAdapter's own (Nest types it with `any`); narrowing it would not override it.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override bindMessageHandlers(client: any, handlers: any[], transform: (data: any) => any): void {
    if (handlers.length === 0) return;
    super.bindMessageHandlers(client, handlers, transform);
  }
}

/**
 * Changes the largest frame one worker socket accepts. The server's `maxPayload` (the
 * pre-registration cap, WORKER_REGISTER_FRAME_BYTES) is copied into each socket's frame reader when
 * it connects, and ws has no public way to change it afterwards, so the reader's field is set
 * directly; it is checked against each frame's announced length before any payload is buffered.
 * Returns false (and changes nothing) if this version of ws keeps it elsewhere —
 * worker-ws.adapter.spec.ts fails then, on upgrade of ws, before any deployment does.
 */
export function setMaxPayload(socket: unknown, bytes: number): boolean {
  const receiver = (socket as { _receiver?: { _maxPayload?: unknown } })._receiver;
  if (!receiver || typeof receiver._maxPayload !== 'number') return false;
  receiver._maxPayload = bytes;
  return true;
}
