import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { AppConfig } from '../config';
import { buildOpenApiDocument } from './openapi.document';
import { registerSwaggerUi } from './swagger-ui';

export const OPENAPI_PATH = '/openapi.json';
export const DOCS_PATH = '/docs';

/**
 * `GET /openapi.json` (the OpenAPI 3 document) and `GET /docs` (Swagger UI), both public and
 * served by the gateway. The document is built on first request, from the routes Nest has
 * scanned, and kept. Routes only: nothing here touches body parsing, pipes or validation.
 */
export function setupOpenApi(app: NestFastifyApplication, config: AppConfig): void {
  const fastify = app.getHttpAdapter().getInstance();
  let json: string | undefined;
  fastify.get(OPENAPI_PATH, (_req, reply) => {
    json ??= JSON.stringify(buildOpenApiDocument(app, config));
    reply.type('application/json; charset=utf-8').send(json);
  });
  registerSwaggerUi(fastify, DOCS_PATH, OPENAPI_PATH.slice(1));
}
