import { Errors, GatewayError } from '../common/gateway-error';
import type { WorkerSession } from './worker-session';

/**
 * 409 for a command that travels on the worker's own link when another replica holds that link
 * (cluster mode): lifecycle operations and `POST /admin/workers/:id/refresh-models` answer it alike.
 */
export const remoteWorkerConflict = (w: WorkerSession): GatewayError =>
  Errors.conflict(`Worker '${w.id}' is connected to gateway replica '${w.replica}': send the request there`);
