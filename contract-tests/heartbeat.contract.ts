/**
 * Contract: "Heartbeat, load reporting" — the server pings on a fixed interval regardless of
 * inbound traffic, closes silent workers with 1000 "worker heartbeat timed out" and requeues
 * their work, and routes by the load workers report in pongs.
 */
import { useScope } from './support/scope';
import { target } from './support/target';
import { chatBody, sleep, uniqueModel, waitUntil } from './support/util';
import { firstRequest } from './support/worker';

const interval = () => target().heartbeatIntervalMs;
const window = () => target().heartbeatTimeoutMs;
/** Test timeout that also fits a target with production heartbeat timings. */
const budget = (multiple: number) => Math.max(30_000, multiple * Math.max(interval(), window()) + 10_000);

describe('heartbeat', () => {
  const scope = useScope();

  test(
    'the server sends JSON pings on its interval to an idle worker',
    async () => {
      const w = await scope.worker({ models: [uniqueModel('hb')] });
      await sleep(6 * interval());
      const pings = w.all('ping');
      expect(pings.length).toBeGreaterThanOrEqual(3);
      for (const p of pings) {
        if (p.timestamp_unix_ms !== undefined) expect(Number.isInteger(p.timestamp_unix_ms)).toBe(true);
      }
    },
    budget(8),
  );

  test(
    'pings keep coming while a long stream keeps the worker busy sending chunks',
    async () => {
      const model = uniqueModel('hbstream');
      const w = await scope.worker({ models: [model] });
      const x = scope.post('/v1/chat/completions', chatBody(model, { stream: true }));
      const req = await w.nextRequest();
      const pingsAtStart = w.all('ping').length;
      // Inbound traffic never pauses: a server that pings only after inbound silence sends none.
      const tick = Math.max(20, Math.floor(interval() / 5));
      const until = Date.now() + 6 * interval();
      let i = 0;
      while (Date.now() < until) {
        w.chunk(req.request_id, `data: {"i":${i++}}\n\n`);
        await sleep(tick);
      }
      const pingsDuringStream = w.all('ping').length - pingsAtStart;
      w.complete(req.request_id, { status: 200 });
      expect((await x.done).status).toBe(200);
      expect(pingsDuringStream).toBeGreaterThanOrEqual(3);
    },
    budget(8),
  );

  test(
    'a worker that answers pings stays connected well beyond the pong window',
    async () => {
      const w = await scope.worker({ models: [uniqueModel('alive')] });
      await sleep(3 * window());
      expect(w.isOpen).toBe(true);
      expect(w.pongsSent).toBeGreaterThan(0);
    },
    budget(4),
  );

  test(
    'a silent worker is closed with 1000 "worker heartbeat timed out" and its in-flight request is requeued to another worker',
    async () => {
      const model = uniqueModel('silent');
      const a = await scope.worker({ models: [model], max_concurrent: 1 }, {}, 'A');
      const x = scope.post('/v1/chat/completions', chatBody(model, { marker: 'survives' }));
      const req = await a.nextRequest();
      a.autoPong = false; // goes silent, socket stays open
      const b = await scope.worker({ models: [model], max_concurrent: 1 }, {}, 'B');
      const closed = await a.closed;
      expect({ code: closed.code, reason: closed.reason }).toEqual({ code: 1000, reason: 'worker heartbeat timed out' });
      const again = await b.nextRequest();
      expect(again.body).toBe(req.body);
      b.respondJson(again.request_id, { served_by: 'B' });
      const res = await x.done;
      expect(res.status).toBe(200);
      expect(res.json()).toEqual({ served_by: 'B' });
    },
    budget(4),
  );

  test(
    'pong load accounting: a worker reporting high load is passed over for one reporting none',
    async () => {
      const model = uniqueModel('pongload');
      const busy = await scope.worker({ models: [model], max_concurrent: 8 }, {}, 'busy');
      const idle = await scope.worker({ models: [model], max_concurrent: 8 }, {}, 'idle');
      busy.reportedLoad = 5;
      idle.reportedLoad = 0;
      const pongsBefore = busy.pongsSent;
      // Wait until the gateway has heard the reported load (two pong rounds).
      await waitUntil(() => busy.pongsSent >= pongsBefore + 2, 'busy worker to pong twice', budget(4));
      const served: string[] = [];
      for (let i = 0; i < 4; i++) {
        const x = scope.post('/v1/chat/completions', chatBody(model, { i }));
        const { worker, frame } = await firstRequest([busy, idle], (f) => JSON.parse(f.body).i === i);
        worker.respondJson(frame.request_id, { i });
        expect((await x.done).status).toBe(200);
        served.push(worker.label);
      }
      expect(served).toEqual(['idle', 'idle', 'idle', 'idle']);
    },
    budget(6),
  );

  test(
    'pong load accounting: a worker reporting load at its max_concurrent gets no new requests until it reports less',
    async () => {
      const model = uniqueModel('full');
      const w = await scope.worker({ models: [model], max_concurrent: 2 });
      w.reportedLoad = 2;
      const before = w.pongsSent;
      await waitUntil(() => w.pongsSent >= before + 2, 'two pongs', budget(4));
      const x = scope.post('/v1/chat/completions', chatBody(model));
      await sleep(3 * interval());
      expect(w.requests()).toHaveLength(0);
      w.reportedLoad = 0;
      const req = await w.next('request', () => true, budget(4));
      w.respondJson(req.request_id, { ok: true });
      expect((await x.done).status).toBe(200);
    },
    budget(8),
  );
});
