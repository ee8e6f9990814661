import type { Socket } from 'node:net';
import type WebSocket from 'ws';
import type { Clock } from '../common/clock';

/** A link's calling end pings this often; both ends check then whether they heard from the other. */
export const LINK_PING_MS = 2000;
/** A link that heard nothing for this long (not a byte) is dead: its requests are lost. */
export const LINK_DEAD_MS = 6000;

/**
 * The TCP socket under a link's WebSocket (ws keeps it in a field of its own; there is no public
 * accessor). Undefined before the link opened, or if a later ws keeps it elsewhere — then corking
 * and byte-level liveness are skipped, nothing else changes (peer-link.spec.ts checks it is found).
 */
export function rawSocketOf(ws: WebSocket): Socket | undefined {
  const socket = (ws as unknown as { _socket?: Socket })._socket;
  return socket && typeof socket.cork === 'function' ? socket : undefined;
}

/**
 * Watches an open link and closes it (`terminate`) when the other end has sent nothing for
 * LINK_DEAD_MS. Any byte counts, not only whole messages: every request shares the link, and a
 * large answer (or body) in transit holds the other end's pongs behind it without the link being
 * dead. A pause of this process itself (timers late by more than a ping interval) is not charged to
 * the peer. `ping`: this end sends the pings (the calling end; the owner answers them). Returns the
 * function that stops watching.
 */
export function watchLink(ws: WebSocket, clock: Clock, ping: boolean): () => void {
  const tcp = rawSocketOf(ws);
  let heard = false;
  const onData = () => (heard = true);
  tcp?.on('data', onData);
  // Without the raw socket, whole messages and pongs still count.
  if (!tcp) ws.on('message', onData).on('pong', onData).on('ping', onData);
  let lastHeard = clock.now();
  let lastTick = lastHeard;
  const timer = clock.setInterval(() => {
    const now = clock.now();
    if (heard || now - lastTick > 2 * LINK_PING_MS) lastHeard = now;
    heard = false;
    lastTick = now;
    if (now - lastHeard > LINK_DEAD_MS) return ws.terminate();
    if (ping) ws.ping();
  }, LINK_PING_MS);
  return () => {
    clock.clearInterval(timer);
    tcp?.off('data', onData);
  };
}
