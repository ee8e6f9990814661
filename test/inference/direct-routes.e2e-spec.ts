import type { ApplicationConfig } from '@nestjs/core';
import { startGateway, TestGateway } from '../support/gateway';
import { ScriptedWorker } from '../support/scripted-worker';
import { chat, post } from '../support/http';
import { RELAYED_ROUTES } from '../../src/inference/inference.controller';
import { InferenceService } from '../../src/inference/inference.service';

/** The relayed routes are served by Fastify without Nest's per-request pipeline (src/inference/direct-routes.ts). */
describe('relayed routes without Nest’s per-request pipeline', () => {
  let gw: TestGateway;
  /** The call stack of each relay call: Nest's pipeline shows as its router's frames. */
  const stacks: string[] = [];
  beforeAll(async () => {
    gw = await startGateway({});
    const relay = InferenceService.prototype.relay;
    jest.spyOn(InferenceService.prototype, 'relay').mockImplementation(function (this: InferenceService, ...args) {
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 100;
      stacks.push(new Error().stack ?? '');
      Error.stackTraceLimit = limit;
      return relay.apply(this, args);
    });
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await gw.close();
  });

  it('answers every relayed route through the relay, not through Nest’s router', async () => {
    const { worker } = await ScriptedWorker.register(gw.workerUrl, { models: ['direct'] });
    const pending = post(gw.url, '/v1/chat/completions', chat('direct'));
    const req = await worker.next('request');
    worker.complete(req.request_id, {});
    expect((await pending).status).toBe(200);
    for (const { path } of RELAYED_ROUTES) {
      // No model: each route answers its own dialect's 400 from the relay's body check.
      const res = await post(gw.url, path, {});
      expect(res.status).toBe(400);
    }
    expect(stacks).toHaveLength(1 + RELAYED_ROUTES.length);
    for (const stack of stacks) expect(stack).not.toMatch(/@nestjs[\\/]core[\\/]router/);
    worker.close();
  });

  it('has no global guard, interceptor or pipe (the direct routes would skip it)', () => {
    const config = (gw.app as unknown as { config: ApplicationConfig }).config;
    expect(config.getGlobalGuards()).toEqual([]);
    expect(config.getGlobalInterceptors()).toEqual([]);
    expect(config.getGlobalPipes()).toEqual([]);
    expect(config.getGlobalRequestGuards()).toEqual([]);
    expect(config.getGlobalRequestInterceptors()).toEqual([]);
    expect(config.getGlobalRequestPipes()).toEqual([]);
  });
});
