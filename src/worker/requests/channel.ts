import { WorkerToServerMessage } from '../../protocol';

/**
 * What a relayed request needs from the link it came in on. The link's session has this shape;
 * the requests part knows no WebSocket.
 */
export interface RelayChannel {
  readonly open: boolean;
  /** The gateway asked this worker to drain on this link. */
  readonly draining: boolean;
  /** Protocol extensions the gateway accepted in register_ack. */
  readonly features: ReadonlySet<string>;
  /** The endpoint list last advertised on this link; undefined = every inference endpoint. */
  readonly advertisedEndpoints?: string[];
  /** Bytes queued in the socket, not yet on the wire. */
  readonly bufferedAmount: number;
  /** False (and nothing sent) when the link is no longer open. */
  send(message: WorkerToServerMessage, onWritten?: () => void): boolean;
}
