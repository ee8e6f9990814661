// The module object itself (not an interop copy), whose `fastify` export the adapter calls.
import fastifyModule = require('fastify');
import { startGateway, TestGateway } from '../support/gateway';

export interface RegisteredRoute {
  method: string;
  /** In OpenAPI form: `/v1/pools/{id}/drain`. */
  path: string;
}

/**
 * Starts a gateway and records every route Fastify registers (its `onRoute` hook, added to the
 * instance the Fastify adapter creates), so tests compare the document with what is really served.
 */
export async function startRecordingGateway(env: Record<string, string> = {}): Promise<{ gw: TestGateway; routes: RegisteredRoute[] }> {
  const routes: RegisteredRoute[] = [];
  const real = fastifyModule.fastify;
  const spy = jest.spyOn(fastifyModule, 'fastify').mockImplementation(((options?: Parameters<typeof real>[0]) => {
    const instance = real(options);
    instance.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) routes.push({ method: String(method).toLowerCase(), path: route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}') });
    });
    return instance;
  }) as typeof real);
  try {
    return { gw: await startGateway(env), routes };
  } finally {
    spy.mockRestore();
  }
}

export async function getJson(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers });
  return { status: res.status, body: await res.json() };
}
