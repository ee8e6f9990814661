import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';

/**
 * Swagger UI served by the gateway itself, from the `swagger-ui-dist` package `@nestjs/swagger`
 * depends on: no CDN, and no `@fastify/static` (which `SwaggerModule.setup` needs on Fastify).
 * Every URL is relative to the page, so the UI also works behind a proxy that adds a path prefix.
 */
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/** The UI needs inline styles and data: images; scripts and fetches stay on the gateway. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'self'; frame-ancestors 'self'";

function page(docsName: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Switchboard API</title>
  <link rel="stylesheet" href="${docsName}/swagger-ui.css">
  <link rel="icon" type="image/png" href="${docsName}/favicon-32x32.png" sizes="32x32">
  <link rel="icon" type="image/png" href="${docsName}/favicon-16x16.png" sizes="16x16">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${docsName}/swagger-ui-bundle.js"></script>
  <script src="${docsName}/swagger-ui-init.js"></script>
</body>
</html>
`;
}

function initScript(documentUrl: string): string {
  // validatorUrl: null — Swagger UI would otherwise ask validator.swagger.io about the document;
  // showExtensions: the operations' x-examples are shown.
  return `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(documentUrl)},
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    showExtensions: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout'
  });
});
`;
}

/** The directory of `swagger-ui-dist`, resolved from `@nestjs/swagger` (whose dependency it is). */
export function swaggerUiDistPath(): string {
  const fromSwagger = createRequire(require.resolve('@nestjs/swagger'));
  return dirname(fromSwagger.resolve('swagger-ui-dist/package.json'));
}

/**
 * `GET {docsPath}`: the UI page; `GET {docsPath}/<asset>`: its files, read once on first use.
 * `documentUrl` is relative to the page (`openapi.json` next to `/docs`).
 */
export function registerSwaggerUi(fastify: FastifyInstance, docsPath: string, documentUrl: string): void {
  const name = docsPath.slice(docsPath.lastIndexOf('/') + 1);
  const html = page(name);
  const init = initScript(documentUrl);
  const files = new Map<string, Buffer>();
  let dist: string | undefined;

  fastify.get(docsPath, (_req, reply) => {
    reply.header('content-security-policy', CSP).type('text/html; charset=utf-8').send(html);
  });
  // `/docs/` would resolve the relative URLs one level too deep: send it to `/docs`.
  fastify.get(`${docsPath}/`, (_req, reply) => {
    reply.redirect(`../${name}`, 301);
  });
  fastify.get(`${docsPath}/swagger-ui-init.js`, (_req, reply) => {
    reply.type('application/javascript; charset=utf-8').header('cache-control', 'no-cache').send(init);
  });
  for (const [file, type] of Object.entries(ASSETS)) {
    fastify.get(`${docsPath}/${file}`, (_req, reply) => {
      let body = files.get(file);
      if (!body) files.set(file, (body = readFileSync(join((dist ??= swaggerUiDistPath()), file))));
      reply.type(type).header('cache-control', 'public, max-age=86400').send(body);
    });
  }
}
