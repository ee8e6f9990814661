import type { Socket } from 'node:net';

/**
 * The TCP socket under a `ws` WebSocket. ws keeps it in a private field and has no public accessor;
 * the gateway's worker link and cluster link cork it to send one turn's frames
 * in one write, and the cluster link watches its raw bytes for liveness. Undefined before the socket
 * opened, or if a later ws keeps it elsewhere: callers then send frame by frame, nothing else changes
 * (peer-link.spec.ts and worker-ws.adapter.spec.ts fail first, on an upgrade of ws).
 */
export function rawSocketOf(ws: unknown): Socket | undefined {
  const socket = (ws as { _socket?: Socket } | null)?._socket;
  return socket && typeof socket.cork === 'function' ? socket : undefined;
}
