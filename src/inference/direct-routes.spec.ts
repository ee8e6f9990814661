import 'reflect-metadata';
import { CanActivate, UseGuards } from '@nestjs/common';
import Fastify, { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DirectRoute, serveDirectly } from './direct-routes';

class Allow implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

class Plain {
  relay(): void {}
  other(): void {}
}

class Guarded {
  @UseGuards(Allow)
  relay(): void {}
}

@UseGuards(Allow)
class GuardedClass {
  relay(): void {}
}

describe('serveDirectly', () => {
  let app: FastifyInstance;
  afterEach(async () => {
    await app.close();
  });

  /** Registers POST /relay, POST /other and GET /relay with a handler standing for Nest's; returns who answered. */
  async function answers(controller: abstract new () => unknown): Promise<Record<string, string>> {
    app = Fastify();
    const direct = (req: FastifyRequest, reply: FastifyReply) => void reply.send(`direct ${req.method}`);
    serveDirectly(app, controller, new Map<string, DirectRoute>([['/relay', { method: 'relay', handle: direct }]]));
    const nest = (req: FastifyRequest, reply: FastifyReply) => void reply.send(`nest ${req.method}`);
    app.post('/relay', nest);
    app.post('/other', nest);
    app.get('/relay', nest);
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const text = async (method: string, path: string) => (await fetch(`${url}${path}`, { method })).text();
    return { postRelay: await text('POST', '/relay'), postOther: await text('POST', '/other'), getRelay: await text('GET', '/relay') };
  }

  it('hands the listed POST route to its handler, and nothing else', async () => {
    expect(await answers(Plain)).toEqual({ postRelay: 'direct POST', postOther: 'nest POST', getRelay: 'nest GET' });
  });

  it("leaves a route with a guard on its method, or on its controller, to Nest's pipeline", async () => {
    expect((await answers(Guarded)).postRelay).toBe('nest POST');
    await app.close();
    expect((await answers(GuardedClass)).postRelay).toBe('nest POST');
  });
});
