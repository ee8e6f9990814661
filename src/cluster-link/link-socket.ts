import type WebSocket from 'ws';
import type { Clock } from '../common/clock';
import { rawSocketOf } from '../common/ws-tcp-socket';

/** A link's calling end pings this often; both ends check then whether they heard from the other. */
export const LINK_PING_MS = 2000;
/** A link that heard nothing for this long (not a byte) is dead: its requests are lost. */
export const LINK_DEAD_MS = 6000;

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
