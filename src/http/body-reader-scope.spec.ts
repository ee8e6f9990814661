import Fastify, { FastifyInstance } from 'fastify';
import { readBodiesWithoutBind } from './body-reader-scope';

/* eslint-disable @typescript-eslint/no-require-imports -- Fastify's internals have no typed entry point */
const symbols = require('fastify/lib/symbols') as Record<string, symbol>;
/* eslint-enable @typescript-eslint/no-require-imports */

interface ContentTypeParser {
  getParser(contentType: unknown): unknown;
}

/** A server wired like bootstrap.ts: the raw body kept as a string by the catch-all parser. */
async function start(bodyLimit = 1024): Promise<{ app: FastifyInstance; url: string; parser: ContentTypeParser }> {
  const app = Fastify({ bodyLimit });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  readBodiesWithoutBind(app);
  app.post('/echo', async (req) => ({ body: req.body, type: req.headers['content-type'] ?? null }));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const parser = (app as unknown as Record<symbol, ContentTypeParser>)[symbols.kContentTypeParser];
  return { app, url, parser };
}

describe('readBodiesWithoutBind', () => {
  let server: Awaited<ReturnType<typeof start>>;
  beforeEach(async () => {
    server = await start();
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await server.app.close();
  });

  const post = (body: string, contentType: string) => fetch(`${server.url}/echo`, { method: 'POST', headers: { 'content-type': contentType }, body });

  it('hands the body to the handler as the raw string, whatever the content type', async () => {
    for (const type of ['application/json', 'text/plain; charset=utf-8', 'application/x-anything']) {
      const res = await post('{"model":"m", "x": 1}', type);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ body: '{"model":"m", "x": 1}', type });
    }
  });

  it('looks a content type up once, not on every request', async () => {
    const getParser = jest.spyOn(Object.getPrototypeOf(server.parser) as ContentTypeParser, 'getParser');
    for (let i = 0; i < 3; i++) expect((await post('{}', 'application/json')).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await post('{}', 'text/plain')).status).toBe(200);
    expect(getParser.mock.calls.map((c) => c[0])).toEqual(['application/json', 'text/plain']);
  });

  it('still answers a body over the limit 413', async () => {
    const res = await post(`"${'x'.repeat(2000)}"`, 'application/json');
    expect(res.status).toBe(413);
  });
});
