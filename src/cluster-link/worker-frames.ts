import type { RequestFrames } from './forward-relays';

/**
 * The frame handlers worker links use: the Dispatcher's own in one process; in cluster mode the
 * relays of forwarded requests in front of them (a frame about a request another replica sent
 * here goes back to that replica, every other frame to the Dispatcher).
 */
export abstract class WorkerFrames {
  abstract readonly handlers: RequestFrames;
}
