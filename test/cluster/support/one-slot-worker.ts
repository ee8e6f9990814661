import { TEST_ADMIN_TOKEN, TestGateway } from '../../support/gateway';
import { admin, eventually } from '../../support/http';
import { ScriptedWorker } from '../../support/scripted-worker';

/** A worker of `model` with one slot, registered at `owner`, once every replica in `all` lists it. */
export async function oneSlotWorkerSeenBy(owner: TestGateway, all: TestGateway[], model: string, waitMs: number): Promise<ScriptedWorker> {
  const { worker } = await ScriptedWorker.register(owner.workerUrl, {
    models: [model],
    max_concurrent: 1,
    worker_name: model,
    features: ['response_start'],
  });
  for (const g of all) {
    await eventually(
      async () => ((await admin(g.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN)).json.data as Array<{ name: string }>).some((x) => x.name === model),
      waitMs,
      `${model} visible on ${g.url}`,
    );
  }
  return worker;
}

/**
 * Until every replica in `all` has the worker of `model` busy (from its replica's publication, within
 * 20 ms): a request sent to another replica before that finds the slot free there, is refused by the
 * worker's replica (slot taken) and routed again, which takes it out of the arrival order a test pins.
 */
export async function busySeenBy(all: TestGateway[], model: string, waitMs: number): Promise<void> {
  for (const g of all) {
    await eventually(
      async () =>
        ((await admin(g.url, 'GET', '/admin/workers', TEST_ADMIN_TOKEN)).json.data as Array<{ name: string; load: number }>).some(
          (x) => x.name === model && x.load >= 1,
        ),
      waitMs,
      `${model} busy as seen from ${g.url}`,
    );
  }
}
