import { eventually } from '../support/http';
import { Balancer } from './support/balancer';
import { FailoverCluster, ownModel, REPLICAS, ReplicaName, SHARED_MODEL, WAIT } from './support/failover-cluster';
import { describeFailures, newTag, Outcome, send, steadyLoad } from './support/load';
import { BackendCall } from './support/mock-backend';
import { readyStatus } from './support/processes';
import { describeWithPostgres } from './support/postgres';

/**
 * Losing a replica and losing Redis (issue 18) with real processes: three `node dist/main.js`
 * replicas, three real worker daemons (`node dist/worker/main.js --proxy-url a,b,c`) each in front
 * of its own mock backend, clients over HTTP. Every case asserts what clients see, and compares
 * what the backends answered with what the clients got (nothing lost, nothing answered twice).
 * `dist/` is built first when it is missing or older than `src/` (support/processes.ts).
 */
describeWithPostgres('cluster failover with real gateway and worker processes', () => {
  const cluster = new FailoverCluster();
  const { gw, workers, backends } = cluster;

  beforeAll(() => cluster.start(), 300_000);
  afterAll(() => cluster.stop(), 120_000);
  /** Loads a failed case left running. */
  const afterThis: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const x of REPLICAS) backends[x].releaseAll();
    for (const stop of afterThis.splice(0)) await stop();
  });

  const allCalls = (): BackendCall[] => REPLICAS.flatMap((x) => backends[x].calls);
  /**
   * What went wrong with duplicates among these outcomes: a tag run to the end by two backend calls
   * (the work done twice: `lostWith`, when given, excuses a first run by that worker, whose answer
   * died with its gateway), or a client answered without exactly one backend answer behind it.
   */
  const duplicates = (outcomes: readonly Outcome[], lostWith?: string): string[] => {
    const problems: string[] = [];
    for (const o of outcomes) {
      const calls = allCalls().filter((c) => c.tag === o.tag && c.finished);
      const counted = calls.filter((c, i) => !(c.backend === lostWith && i < calls.length - 1));
      if (counted.length > 1) problems.push(`${o.tag} run to the end ${calls.length} times: ${JSON.stringify(calls)}, client ok=${o.ok}`);
      else if (o.ok && counted.length !== 1) problems.push(`${o.tag} answered with ${counted.length} backend answers`);
    }
    return problems;
  };
  const replicaOf = async (viewer: ReplicaName, worker: string) => (await cluster.workersOn(viewer)).find((w) => w.name === worker)?.replica;

  it(
    'Redis stopped then restarted: each replica serves its own workers (degraded), a model only another replica serves is not forwarded, re-joined without restart',
    () =>
      cluster.withLogs(async () => {
        await cluster.allUp();
        // Where each worker is now (the earlier cases moved some): a replica with a worker, and one without that worker.
        const where = new Map((await cluster.workersOn('a')).map((w) => [w.name, w.replica]));
        const owner = REPLICAS.find((x) => [...where.values()].includes(`gw-${x}`))!;
        const served = REPLICAS.find((x) => where.get(`worker-${x}`) === `gw-${owner}`)!;
        const elsewhere = REPLICAS.find((x) => x !== owner)!;
        const model = ownModel(served);

        await cluster.redis.stop();
        for (const x of REPLICAS) {
          await eventually(async () => ((await cluster.health(x)).cluster as { degraded?: boolean })?.degraded === true, WAIT, `gw-${x} degraded`);
          expect(await cluster.gauge(x, 'switchboard_cluster_degraded')).toBe(1);
          expect(await readyStatus(gw[x].url)).toBe(200);
        }
        // Its own workers: served as always.
        const local = [await send(gw[owner].url, model, newTag('degraded-local'), true), await send(gw[owner].url, model, newTag('degraded-local'), false)];
        expect(describeFailures(local)).toBe('');
        // Another replica's worker: not forwarded. Alone, a replica drops the other replicas' workers
        // from its fleet: a model none of its own workers served lately is unknown to it (404 at
        // once); one that a worker connected to it served lately waits in its queue (504 after QUEUE_TIMEOUT_SECS).
        const remote = await send(gw[elsewhere].url, model, newTag('degraded-remote'), false);
        const answer = { status: remote.status, code: (JSON.parse(remote.raw) as { error?: { code?: string } }).error?.code };
        expect([
          { status: 404, code: 'model_not_found' },
          { status: 504, code: 'queue_timeout' },
        ]).toContainEqual(answer);
        expect(allCalls().some((c) => c.tag === remote.tag)).toBe(false);
        for (const x of REPLICAS) expect(gw[x].running).toBe(true);

        await cluster.redis.start();
        for (const x of REPLICAS) {
          await eventually(async () => ((await cluster.health(x)).cluster as { degraded?: boolean })?.degraded === false, WAIT, `gw-${x} re-joined`);
          expect(await cluster.gauge(x, 'switchboard_cluster_degraded')).toBe(0);
        }
        await cluster.allMembers();
        for (const x of REPLICAS) await cluster.seesWorkers(x, 3);
        const rejoined = [await send(gw[elsewhere].url, model, newTag('rejoined'), true), await send(gw[elsewhere].url, model, newTag('rejoined'), false)];
        expect(describeFailures(rejoined)).toBe('');
        for (const x of REPLICAS) expect(gw[x].running).toBe(true);
      }),
    120_000,
  );

  it(
    'kill -9 of a replica under load: its workers move, forwarded requests not started are served elsewhere once, started streams end with the error event, nothing else fails',
    () =>
      cluster.withLogs(async () => {
        // worker-a's backend holds the first stream (after its first chunk) and the first plain request
        // (before any byte) it gets: both forwarded there by gw-b or gw-c, whose clients (ten at a
        // time, more than their own workers' slots) overflow onto the other replicas' workers.
        let streams = 0;
        let plains = 0;
        backends.a.policy = (c) => (c.stream ? (streams++ < 1 ? 'hold' : 'answer') : plains++ < 1 ? 'hold' : 'answer');
        const load = steadyLoad('kill', () => [gw.b.url, gw.c.url], SHARED_MODEL, 10);
        afterThis.push(() => load.stop());
        const held: BackendCall[] = await eventually(
          () => {
            const h = backends.a.holding;
            const startedStreams = h.filter((c) => c.stream && load.live.get(c.tag)?.started);
            return startedStreams.length === 1 && h.filter((c) => !c.stream).length === 1 ? h : undefined;
          },
          WAIT,
          'a started stream and an unanswered plain request held at worker-a',
        )
          .catch((e: Error) => {
            const calls = backends.a.calls.map((c) => ({ ...c, client_started: load.live.get(c.tag)?.started }));
            throw new Error(`${e.message}; worker-a's backend got ${JSON.stringify(calls)}; answered: ${load.outcomes.length}`);
          })
          .then((h) => h!);
        expect(await gw.a.kill9()).toEqual({ code: null, signal: 'SIGKILL' });

        // worker-a reconnects to the next gateway of its list.
        await eventually(async () => (await replicaOf('b', 'worker-a')) === 'gw-b', WAIT, 'worker-a listed at gw-b');
        await eventually(async () => (await replicaOf('c', 'worker-a')) === 'gw-b', WAIT, 'gw-c sees worker-a at gw-b');
        // The load goes on until worker-a has served requests again, at its new replica.
        const servedBefore = backends.a.calls.filter((c) => c.finished).length;
        await eventually(() => backends.a.calls.filter((c) => c.finished).length >= servedBefore + 3, WAIT, 'worker-a serves again');
        const outcomes = await load.stop();

        const byTag = new Map(outcomes.map((o) => [o.tag, o]));
        // A stream under way on worker-a when gw-a died: its client's stream ends with the error
        // event (never [DONE]), and it is never run again. The held one is such a stream for sure.
        const cut = outcomes.filter((o) => o.stream && backends.a.calls.some((c) => c.tag === o.tag && c.started) && !o.ok);
        for (const o of cut) {
          expect({ tag: o.tag, status: o.status, errorEvent: o.errorEvent, done: o.done }).toEqual({ tag: o.tag, status: 200, errorEvent: true, done: false });
          expect(allCalls().filter((c) => c.tag === o.tag)).toHaveLength(1);
        }
        for (const call of held.filter((c) => c.stream)) expect(cut.map((o) => o.tag)).toContain(call.tag);
        for (const call of held.filter((c) => !c.stream)) {
          // Requeued and served elsewhere, in full, once.
          expect(byTag.get(call.tag)).toMatchObject({ ok: true });
          expect(backends.b.calls.concat(backends.c.calls).filter((c) => c.tag === call.tag && c.finished)).toHaveLength(1);
        }
        // Nothing else fails, and no client request is answered twice or by two runs of the backend
        // (a plain request worker-a had answered whose answer died with gw-a is run once more elsewhere).
        const others = outcomes.filter((o) => !cut.includes(o));
        expect(describeFailures(others)).toBe('');
        expect(others.length).toBeGreaterThan(20);
        expect(duplicates(outcomes, 'worker-a').join('\n')).toBe('');
      }),
    120_000,
  );

  it(
    'SIGTERM of a replica: /health/ready 503 at once, what it holds finishes (its own clients’ and forwarded requests), its worker moves, it exits 0',
    () =>
      cluster.withLogs(async () => {
        await cluster.allUp();
        // worker-c (the only one serving only-c) holds four requests at gw-c: a stream (started) and
        // a plain request of gw-c's own clients, the same two forwarded by gw-a.
        backends.c.policy = (c) => (c.tag.startsWith('sigterm-') ? 'hold' : 'answer');
        const held = [
          send(gw.c.url, ownModel('c'), newTag('sigterm-own'), true),
          send(gw.c.url, ownModel('c'), newTag('sigterm-own'), false),
          send(gw.a.url, ownModel('c'), newTag('sigterm-forwarded'), true),
          send(gw.a.url, ownModel('c'), newTag('sigterm-forwarded'), false),
        ];
        await eventually(() => backends.c.holding.length === 4, WAIT, 'worker-c holds four requests');
        const load = steadyLoad('during-sigterm', () => [gw.a.url, gw.b.url], SHARED_MODEL, 4);
        try {
          await eventually(() => load.outcomes.length >= 4, WAIT, 'load running');
          gw.c.signal('SIGTERM');
          await eventually(async () => (await readyStatus(gw.c.url)) === 503, WAIT, 'gw-c unready');
          // Unready while it still drains what it holds.
          expect(gw.c.running).toBe(true);
          // Give the other replicas time to act on gw-c's leaving before its worker answers (they
          // must not take back what gw-c still relays): a second of load on gw-a and gw-b.
          const seen = load.outcomes.length;
          await eventually(() => load.outcomes.length >= seen + 8, WAIT, 'load goes on during the drain');
          backends.c.releaseAll();
          // Everything below is collected, so one run shows every way the case fails.
          const problems: string[] = [];
          const answers = await Promise.all(held);
          if (answers.some((o) => !o.ok)) problems.push(`held requests failed:\n${describeFailures(answers)}`);
          const exit = await gw.c.exited;
          if (exit.code !== 0) problems.push(`gw-c exited ${JSON.stringify(exit)}`);

          // worker-c got graceful_shutdown and moved on to the next gateway of its list (gw-a).
          await eventually(async () => (await replicaOf('a', 'worker-c')) === 'gw-a', WAIT, 'worker-c listed at gw-a');
          await eventually(async () => (await replicaOf('b', 'worker-c')) === 'gw-a', WAIT, 'gw-b sees worker-c at gw-a');
          expect(workers.c.running).toBe(true);
          const after = await send(gw.b.url, ownModel('c'), newTag('after-sigterm'), false);
          if (!after.ok) problems.push(`after the move: ${describeFailures([after])}`);
          const outcomes = await load.stop();
          if (outcomes.some((o) => !o.ok)) problems.push(`load on gw-a and gw-b failed:\n${describeFailures(outcomes)}`);
          problems.push(...duplicates([...answers, ...outcomes, after]));
          expect(problems.join('\n')).toBe('');
        } finally {
          await load.stop();
          backends.c.releaseAll();
        }
      }),
    120_000,
  );

  it(
    'rolling restart behind a balancer that follows readiness: every replica SIGTERMed and restarted in turn, zero failed requests',
    () =>
      cluster.withLogs(async () => {
        await cluster.allUp();
        const events: string[] = [];
        const note = (what: string) => events.push(`${new Date().toISOString().slice(11)} ${what}`);
        const balancer = new Balancer(REPLICAS.map((x) => gw[x].url));
        await balancer.start();
        const target = balancer.url;
        const load = steadyLoad('rolling', () => [target], SHARED_MODEL);
        try {
          for (const x of REPLICAS) {
            await eventually(() => load.outcomes.length >= 10, WAIT, 'load running');
            note(`SIGTERM gw-${x} (${gw[x].url})`);
            gw[x].signal('SIGTERM');
            expect(await gw[x].exited).toEqual({ code: 0, signal: null });
            note(`gw-${x} exited`);
            await gw[x].start();
            note(`gw-${x} ready again`);
            await cluster.allUp();
            note(`gw-${x} sees every member and worker`);
            // The balancer sends the restarted replica its share again before the next one goes.
            const before = balancer.sent.get(gw[x].url) ?? 0;
            await eventually(() => (balancer.sent.get(gw[x].url) ?? 0) >= before + 5, WAIT, `balancer uses gw-${x} again`);
          }
          const outcomes = await load.stop();
          const problems = [describeFailures(outcomes), ...duplicates(outcomes)].filter((p) => p !== '');
          expect(problems.length === 0 ? '' : `${problems.join('\n')}\n${events.join('\n')}`).toBe('');
          expect(outcomes.length).toBeGreaterThan(30);
        } finally {
          await load.stop();
          await balancer.close();
        }
      }),
    150_000,
  );
});
