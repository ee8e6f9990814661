import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiExtension, ApiHeader, ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { HeaderObject, ParameterObject, ReferenceObject, ResponseObject, SchemaObject, SecurityRequirementObject } from '@nestjs/swagger';

export type Schema = SchemaObject | ReferenceObject;

/** One named example of a media type (OpenAPI `examples`). */
export interface ExampleDoc {
  summary: string;
  value: unknown;
}

export interface MediaDoc {
  schema: Schema;
  examples?: Record<string, ExampleDoc>;
}

export interface ResponseDoc {
  description: string;
  headers?: Record<string, HeaderObject | ReferenceObject>;
  /** By media type; absent for a response without a body. */
  content?: Record<string, MediaDoc>;
}

/**
 * One exchange in the operation's `x-examples` vendor extension: a concrete request (the path
 * with its parameters filled in) and the answer it gets. The OpenAPI tests check each against the
 * operation's documented request and response schemas.
 */
export interface XExample {
  summary: string;
  request: { path: string; headers?: Record<string, string>; body?: unknown };
  response: { status: number; headers?: Record<string, string>; body: unknown };
}

/** Everything the document says about one route; `ApiDoc` turns it into Swagger decorators. */
export interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  /** Alternatives (any one suffices); empty = no authentication. */
  security: SecurityRequirementObject[];
  parameters?: ParameterObject[];
  requestBody?: { description?: string; required: boolean; content: { 'application/json': MediaDoc } };
  responses: Record<number, ResponseDoc>;
  xExamples?: Record<string, XExample>;
}

/**
 * The route's OpenAPI operation, from one `OperationDoc` kept in a `*.schemas.ts` file next to the
 * controller (shared helpers in `src/openapi/doc-*.ts`) so the controllers carry a single decorator per route. Documentation only: nothing here adds pipes,
 * validation or parsing, so request handling is unchanged.
 */
export function ApiDoc(doc: OperationDoc): MethodDecorator {
  const decorators: Array<MethodDecorator> = [
    ApiOperation({ operationId: doc.operationId, summary: doc.summary, description: doc.description }),
    ApiTags(...doc.tags),
    ...doc.security.map((requirement) => ApiSecurity(requirement)),
  ];
  for (const p of doc.parameters ?? []) {
    // The example goes in the schema: ApiParam would drop a parameter-level one.
    const schema = { ...(p.schema as SchemaObject), ...(p.example !== undefined ? { example: p.example } : {}) };
    const common = { name: p.name, required: p.required, description: p.description, schema };
    if (p.in === 'path') decorators.push(ApiParam(common));
    else if (p.in === 'query') decorators.push(ApiQuery(common));
    else if (p.in === 'header') decorators.push(ApiHeader(common));
  }
  if (doc.requestBody) {
    const media = doc.requestBody.content['application/json'];
    decorators.push(ApiBody({ description: doc.requestBody.description, required: doc.requestBody.required, schema: media.schema, examples: media.examples }));
  }
  for (const [status, response] of Object.entries(doc.responses)) {
    decorators.push(ApiResponse({ status: Number(status), ...responseObject(response) }));
  }
  if (doc.xExamples) decorators.push(ApiExtension('x-examples', doc.xExamples));
  return applyDecorators(...decorators);
}

function responseObject(r: ResponseDoc): ResponseObject {
  return { description: r.description, ...(r.headers ? { headers: r.headers } : {}), ...(r.content ? { content: r.content } : {}) };
}
