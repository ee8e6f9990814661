import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SecurityRequirementObject, SwaggerModule } from '@nestjs/swagger';
import type { AppConfig } from '../config';
import { apiVersion } from '../control-plane/capabilities.service';
import { API_KEYS_SCHEMAS } from '../api-keys/api-keys.schemas';
import { TENANTS_SCHEMAS } from '../tenancy/tenants.schemas';
import { USAGE_SCHEMAS } from '../usage/usage.schemas';
import { ARTIFACTS_SCHEMAS } from '../artifacts/artifacts.schemas';
import { SECURITY_SCHEMES, TAG_OBJECTS } from '../common/doc-common';
import { CONTROL_PLANE_SCHEMAS } from '../control-plane/control-plane.schemas';
import { ERROR_SCHEMAS } from '../common/doc-errors';
import { INFERENCE_SCHEMAS } from '../inference/inference.schemas';
import { OBSERVABILITY_SCHEMAS } from '../health/health.schemas';
import { TASKS_SCHEMAS } from '../tasks/tasks.schemas';
import { LIFECYCLE_SCHEMAS } from '../lifecycle/lifecycle.schemas';

const DESCRIPTION = `Switchboard is an internal AI gateway: one OpenAI- and Anthropic-compatible endpoint in front of GPU workers.

- **Client** routes (\`/v1/*\`) take a client API key (\`sb-…\`) as \`Authorization: Bearer\` or \`x-api-key\`; it is required with \`REQUIRE_API_KEYS=true\`, optional otherwise.
- **Admin** (\`/admin/*\`), **pool** (\`/v1/pools/*\`) and **model lifecycle** (\`/v1/models/load\`, \`/v1/models/unload\`, \`/v1/cache/flush\`) routes take \`Authorization: Bearer $ADMIN_TOKEN\`; lifecycle operations also a \`verifiedOpToken\`.
- **Health** routes need nothing.

Errors raised by the gateway use the caller's dialect: \`OpenAIError\` on every route but \`/v1/messages\`, which answers \`AnthropicError\`. Every error body has \`code\`, \`kind\` and \`retriable\`; retriable ones add \`retry_after_ms\` and the \`Retry-After\` / \`X-Backoff-Ms\` headers.

Operations may carry \`x-examples\`: complete exchanges (the request path and body, the status and body of the answer).

**Worker link (not an HTTP API):** workers dial out to \`GET /v1/worker/connect\` and upgrade to a WebSocket, authenticated by their provider's secret (\`x-worker-secret\`, with \`?provider=<name>\`); the frames are described in protocol.md. It is not listed under \`paths\`.`;

/**
 * The OpenAPI document of this gateway: routes scanned from the controllers' `@ApiDoc`
 * decorators, the shared schemas, and the client security as configured (anonymous access allowed unless API keys are required).
 * `info.version` is the API version `GET /v1/capabilities` reports.
 */
export function buildOpenApiDocument(app: INestApplication, config: AppConfig): OpenAPIObject {
  const base = new DocumentBuilder().setTitle('Switchboard').setDescription(DESCRIPTION).setVersion(apiVersion()).build();
  base.tags = TAG_OBJECTS;
  base.components = {
    securitySchemes: SECURITY_SCHEMES,
    schemas: {
      ...ERROR_SCHEMAS,
      ...INFERENCE_SCHEMAS,
      ...CONTROL_PLANE_SCHEMAS,
      ...API_KEYS_SCHEMAS,
      ...TENANTS_SCHEMAS,
      ...USAGE_SCHEMAS,
      ...OBSERVABILITY_SCHEMAS,
      ...ARTIFACTS_SCHEMAS,
      ...TASKS_SCHEMAS,
      ...LIFECYCLE_SCHEMAS,
    },
  };
  // A copy: the scanned operations share objects with the decorators' metadata.
  const document = structuredClone(SwaggerModule.createDocument(app, base, { autoTagControllers: false }));
  if (!config.apiKeys.requireApiKeys) allowAnonymousClients(document);
  if (!config.adminToken) {
    const scheme = document.components!.securitySchemes!.AdminToken as { description: string };
    scheme.description += ' This gateway has no ADMIN_TOKEN configured: admin routes answer 403.';
  }
  return document;
}

/** Keys are optional: every operation that takes a client key also accepts none. */
function allowAnonymousClients(document: OpenAPIObject): void {
  for (const item of Object.values(document.paths)) {
    for (const op of [item.get, item.post, item.put, item.patch, item.delete]) {
      const security: SecurityRequirementObject[] | undefined = op?.security;
      if (security?.some((s) => 'ClientApiKey' in s)) security.push({});
    }
  }
}
