import { AsyncResource } from 'node:async_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/* eslint-disable @typescript-eslint/no-require-imports -- Fastify's internals have no typed entry point */
const symbols = require('fastify/lib/symbols') as Record<string, symbol>;
const contentTypeParserModule = require('fastify/lib/content-type-parser') as Record<symbol, { rawBody?: RawBody } | undefined>;
/* eslint-enable @typescript-eslint/no-require-imports */

type Done = (error: unknown, body: unknown) => void;
type Handler = (request: FastifyRequest, reply: FastifyReply) => void;
type RawBody = (request: FastifyRequest, reply: FastifyReply, options: unknown, parser: Parser, done: Done) => void;
interface Parser {
  asString: boolean;
  asBuffer: boolean;
}
interface ContentTypeParser {
  getParser(contentType: unknown): Parser | undefined;
  run(contentType: unknown, handler: Handler, request: FastifyRequest, reply: FastifyReply): void;
}

const patched = new WeakSet<object>();

/** Parsers found per content type, per parser instance (see `parserFor`). */
const parserCaches = new WeakMap<ContentTypeParser, Map<string, Parser | undefined>>();
/** Distinct content types remembered per instance; past it the cache starts over (clients choose the strings). */
const PARSER_CACHE_MAX = 100;

/**
 * `getParser` with the answer remembered per content-type string. Fastify caches the parsers it
 * finds for a specific type, but not the catch-all `*` (the only parser the gateway registers), so
 * every request parsed its content type a second time (after `handleRequest`'s own parse) to find
 * it. Parsers cannot change once the server has started (Fastify throws), and the cache is only
 * filled by requests, so an answer never goes stale.
 */
function parserFor(instance: ContentTypeParser, contentType: unknown): Parser | undefined {
  if (typeof contentType !== 'string') return instance.getParser(contentType);
  let cache = parserCaches.get(instance);
  if (cache === undefined) parserCaches.set(instance, (cache = new Map()));
  else if (cache.has(contentType)) return cache.get(contentType);
  const parser = instance.getParser(contentType);
  if (cache.size >= PARSER_CACHE_MAX) cache.clear();
  cache.set(contentType, parser);
  return parser;
}

/**
 * Reads request bodies the way Fastify does, minus a per-request cost Fastify 5.11 pays on Node 20.
 *
 * Fastify's `ContentTypeParser.run` wraps the callback that receives each body in
 * `AsyncResource.bind`, and on Node 20 every `bind` defines a deprecated `asyncResource` accessor
 * through two `util.deprecate` wrappers (two closures, two `Object.setPrototypeOf` on functions):
 * about 7 % of the gateway's CPU per relayed request (docs/benchmarks.md, "Issue 17"). Fastify
 * itself later replaced `bind` by a callback that runs in the resource's scope (fastify#7012);
 * this does the same for the string and buffer parsers — the only kind the gateway registers
 * (bootstrap.ts) — and leaves every other case to Fastify's own `run`. Same async context (the
 * body callback runs in the request's resource), same destroy, same errors and `connection: close`.
 *
 * Installed on the prototype of the instance's parser, so plugin-scoped copies get it as well;
 * if Fastify's internals are not where this expects them (another version), nothing is changed.
 */
export function readBodiesWithoutBind(fastify: FastifyInstance): void {
  const { kContentTypeParser, kRouteContext, kReplyIsError, kTestInternals } = symbols;
  const rawBody = kTestInternals ? contentTypeParserModule[kTestInternals]?.rawBody : undefined;
  const instanceParser = kContentTypeParser ? (fastify as unknown as Record<symbol, ContentTypeParser | undefined>)[kContentTypeParser] : undefined;
  const proto = instanceParser ? (Object.getPrototypeOf(instanceParser) as ContentTypeParser) : undefined;
  if (!proto || typeof proto.run !== 'function' || typeof proto.getParser !== 'function' || typeof rawBody !== 'function') return;
  if (!kRouteContext || !kReplyIsError || patched.has(proto)) return;
  patched.add(proto);
  const fastifyRun = proto.run;

  proto.run = function run(this: ContentTypeParser, contentType, handler, request, reply) {
    const parser = parserFor(this, contentType);
    if (parser === undefined || (parser.asString !== true && parser.asBuffer !== true)) {
      return fastifyRun.call(this, contentType, handler, request, reply);
    }
    // Fastify passes the request as the resource's options (no trigger id is read from it): kept.
    const resource = new AsyncResource('content-type-parser:run', request as unknown as object);
    const onDone: Done = (error, body) => {
      resource.emitDestroy();
      if (error != null) {
        // We must close the connection as the client may send more data (as Fastify does).
        reply.header('connection', 'close');
        (reply as unknown as Record<symbol, boolean>)[kReplyIsError] = true;
        reply.send(error);
        return;
      }
      request.body = body;
      handler(request, reply);
    };
    const done: Done = (error, body) => resource.runInAsyncScope(onDone, undefined, error, body);
    const context = (reply as unknown as Record<symbol, { _parserOptions: unknown }>)[kRouteContext];
    rawBody(request, reply, context._parserOptions, parser, done);
  };
}
