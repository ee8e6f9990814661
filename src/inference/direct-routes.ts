import { GUARDS_METADATA, INTERCEPTORS_METADATA, PIPES_METADATA } from '@nestjs/common/constants';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';

/** What serves one relayed route: the method of the controller that declares it, and the handler. */
export interface DirectRoute {
  /** The controller method Nest routes it to (checked for guards, interceptors and pipes). */
  method: string;
  handle: (req: FastifyRequest, reply: FastifyReply) => void;
}

const ENHANCERS = [GUARDS_METADATA, INTERCEPTORS_METADATA, PIPES_METADATA];

/**
 * Routes that Fastify hands straight to their handler instead of through Nest's per-request
 * pipeline (an async wrapper, an async parameter resolver with a `Promise.all` over `@Req()` and
 * `@Res()`, the response handler: several promises and microtask turns per request, about 3 % of
 * the gateway's CPU per relayed request, docs/benchmarks.md). The inference handlers take the raw
 * request and reply and answer on the hijacked reply themselves, so that pipeline does nothing for
 * them. Nest still declares the routes (OpenAPI, route listing); only the handler Fastify calls is
 * replaced, when Nest registers it. Errors still reach Nest's exception filters (Fastify's error
 * handler is Nest's), and hooks (correlation id, body reading, access log) run as before.
 *
 * A route whose controller or method carries guards, interceptors or pipes keeps Nest's pipeline:
 * they would otherwise be skipped. (The gateway registers no global ones; the inference e2e tests
 * check that, since they would be skipped as well.)
 */
export function serveDirectly(
  fastify: FastifyInstance,
  controller: abstract new (...args: never[]) => unknown,
  routes: ReadonlyMap<string, DirectRoute>,
): void {
  const enhanced = (target: object) => ENHANCERS.some((key) => (Reflect.getMetadata(key, target) as unknown[] | undefined)?.length);
  if (enhanced(controller)) return;
  fastify.addHook('onRoute', (route: RouteOptions) => {
    if (route.method !== 'POST') return;
    const direct = routes.get(route.url ?? '');
    if (direct === undefined) return;
    const declared = (controller.prototype as Record<string, unknown>)[direct.method];
    if (typeof declared !== 'function' || enhanced(declared)) return;
    route.handler = direct.handle;
  });
}
