import { WsAdapter } from '@nestjs/platform-ws';
import type { Socket } from 'node:net';
import { rawSocketOf } from '../common/ws-tcp-socket';

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

/**
 * Sends one text frame to a worker. Request frames (`hold`) sent to the same worker in one turn of
 * the event loop (every client request read in that turn, a pull path's batch) leave in one socket
 * write when the turn's I/O callbacks are done (`setImmediate`), instead of one write each: on this
 * path a socket write costs far more than the frame (it wakes the worker's reader; `writev` was
 * 14 % of the gateway's busy time for a non-streaming request, docs/benchmarks.md, session 4).
 * Any other frame (cancel, lifecycle, drain) goes out at once, as before, and takes the held ones
 * with it: same bytes in the same order, a cancel never waits behind the turn. A worker's socket
 * is corked by nothing else between frames (ws corks and uncorks within each send), so being corked
 * means holding this turn's requests. Without the TCP socket (rawSocketOf: another ws version, a socket
 * not yet open) frames go out one by one as before — worker-ws.adapter.spec.ts checks that it is found. A socket terminated in the turn (the gateway
 * stopping: the adapter terminates every client) drops what it held; that worker's link is cut then
 * anyway, and it never answers those requests either way.
 */
export function sendInTurn(socket: { send(data: string): void }, text: string, hold: boolean): void {
  const tcp = rawSocketOf(socket);
  if (tcp === undefined) return socket.send(text);
  if (hold && tcp.writableCorked === 0) {
    tcp.cork();
    setImmediate(uncorkTurn, tcp);
  }
  socket.send(text);
  // Not held: out now, after what this turn held (a later uncork of the turn finds nothing to do).
  if (!hold && tcp.writableCorked > 0) tcp.uncork();
}

function uncorkTurn(tcp: Socket): void {
  tcp.uncork();
}
