/**
 * A structural OpenAPI 3.0 check and a validator for the schema subset the document uses
 * (type, nullable, enum, properties, required, additionalProperties, items, allOf/oneOf/anyOf,
 * lengths, ranges, pattern, date-time). Each returns a list of problems: [] means valid.
 */
type Json = any;

export const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const PATH_ITEM_KEYS = new Set<string>([...METHODS, '$ref', 'summary', 'description', 'servers', 'parameters']);
const SCHEMA_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);

export interface Operation {
  method: string;
  path: string;
  op: Json;
}

export function operations(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) if (item[method]) out.push({ method, path, op: item[method] });
  }
  return out;
}

/** `#/components/schemas/X` → the object it names, or undefined. Only local references exist here. */
export function resolveRef(doc: Json, ref: string): Json {
  if (!ref.startsWith('#/')) return undefined;
  let node = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

/** Every `$ref` anywhere in the document, with where it sits. */
function refs(node: Json, at: string, out: Array<{ at: string; ref: string }>): void {
  if (Array.isArray(node)) node.forEach((n, i) => refs(n, `${at}[${i}]`, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push({ at, ref: v });
      // Example values are data: a `$ref` key inside one is not a reference.
      else if (k !== 'example' && k !== 'examples' && k !== 'x-examples') refs(v, `${at}.${k}`, out);
    }
  }
}

/** Well-formedness of one schema object (recursively): known types, `required` naming properties. */
function checkSchema(doc: Json, schema: Json, at: string, problems: string[]): void {
  if (!schema || typeof schema !== 'object') return void problems.push(`${at}: a schema must be an object`);
  if (schema.$ref) return;
  if (schema.type !== undefined && !SCHEMA_TYPES.has(schema.type)) problems.push(`${at}: unknown type ${JSON.stringify(schema.type)}`);
  if (schema.type === 'array' && !schema.items) problems.push(`${at}: an array schema needs items`);
  if (schema.required !== undefined) {
    if (!Array.isArray(schema.required) || schema.required.length === 0) problems.push(`${at}: required must be a non-empty array`);
    else if (schema.properties)
      for (const name of schema.required) if (!(name in schema.properties)) problems.push(`${at}: required '${name}' is not among its properties`);
  }
  if (schema.enum !== undefined && (!Array.isArray(schema.enum) || schema.enum.length === 0)) problems.push(`${at}: enum must be a non-empty array`);
  if (schema.pattern !== undefined) {
    try {
      new RegExp(schema.pattern);
    } catch {
      problems.push(`${at}: pattern is not a regular expression`);
    }
  }
  for (const [name, sub] of Object.entries<Json>(schema.properties ?? {})) checkSchema(doc, sub, `${at}.properties.${name}`, problems);
  if (schema.items) checkSchema(doc, schema.items, `${at}.items`, problems);
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
    checkSchema(doc, schema.additionalProperties, `${at}.additionalProperties`, problems);
  for (const k of ['allOf', 'oneOf', 'anyOf']) for (const [i, sub] of (schema[k] ?? []).entries()) checkSchema(doc, sub, `${at}.${k}[${i}]`, problems);
}

function checkContent(doc: Json, content: Json, at: string, problems: string[]): void {
  if (!content || typeof content !== 'object' || Object.keys(content).length === 0)
    return void problems.push(`${at}: content must name at least one media type`);
  for (const [type, media] of Object.entries<Json>(content)) {
    if (!/^[a-z]+\/[a-z0-9.+*-]+$/i.test(type)) problems.push(`${at}: '${type}' is not a media type`);
    if (!media.schema) problems.push(`${at}.${type}: no schema`);
    else checkSchema(doc, media.schema, `${at}.${type}.schema`, problems);
  }
}

/** OpenAPI 3.0 structure: the fields a client generator or Swagger UI relies on. */
export function checkOpenApiDocument(doc: Json): string[] {
  const problems: string[] = [];
  if (typeof doc.openapi !== 'string' || !/^3\.\d+\.\d+$/.test(doc.openapi)) problems.push(`openapi must be 3.x.y, got ${JSON.stringify(doc.openapi)}`);
  if (typeof doc.info?.title !== 'string' || !doc.info.title) problems.push('info.title is required');
  if (typeof doc.info?.version !== 'string' || !doc.info.version) problems.push('info.version is required');
  if (!doc.paths || typeof doc.paths !== 'object' || Object.keys(doc.paths).length === 0) problems.push('paths must not be empty');

  const schemes = doc.components?.securitySchemes ?? {};
  for (const [name, s] of Object.entries<Json>(schemes)) {
    if (s.type === 'http' && typeof s.scheme !== 'string') problems.push(`securitySchemes.${name}: http needs scheme`);
    else if (s.type === 'apiKey' && (!['header', 'query', 'cookie'].includes(s.in) || typeof s.name !== 'string'))
      problems.push(`securitySchemes.${name}: apiKey needs in and name`);
    else if (!['http', 'apiKey', 'oauth2', 'openIdConnect'].includes(s.type)) problems.push(`securitySchemes.${name}: unknown type ${s.type}`);
  }
  for (const [name, schema] of Object.entries<Json>(doc.components?.schemas ?? {})) checkSchema(doc, schema, `components.schemas.${name}`, problems);
  const tagNames = new Set((doc.tags ?? []).map((t: Json) => t.name));

  const operationIds = new Set<string>();
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    if (!path.startsWith('/')) problems.push(`path '${path}' must start with /`);
    for (const key of Object.keys(item)) if (!PATH_ITEM_KEYS.has(key) && !key.startsWith('x-')) problems.push(`${path}: unknown key '${key}'`);
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    for (const { method, op } of operations({ paths: { [path]: item } })) {
      const at = `${method.toUpperCase()} ${path}`;
      if (typeof op.operationId !== 'string' || !op.operationId) problems.push(`${at}: no operationId`);
      else if (operationIds.has(op.operationId)) problems.push(`${at}: operationId '${op.operationId}' is not unique`);
      else operationIds.add(op.operationId);
      if (typeof op.summary !== 'string' || !op.summary) problems.push(`${at}: no summary`);
      for (const tag of op.tags ?? []) if (!tagNames.has(tag)) problems.push(`${at}: tag '${tag}' is not declared in tags`);
      if (!op.responses || Object.keys(op.responses).length === 0) problems.push(`${at}: no responses`);
      for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
        if (!/^([1-5](\d\d|XX)|default)$/.test(status)) problems.push(`${at}: '${status}' is not a status`);
        if (typeof response.description !== 'string' || !response.description) problems.push(`${at} ${status}: no description`);
        if (response.content) checkContent(doc, response.content, `${at} ${status}`, problems);
      }
      if (op.requestBody) checkContent(doc, op.requestBody.content, `${at} requestBody`, problems);
      const params: Json[] = op.parameters ?? [];
      const seen = new Set<string>();
      for (const p of params) {
        if (!['query', 'header', 'path', 'cookie'].includes(p.in) || typeof p.name !== 'string') problems.push(`${at}: a parameter needs name and in`);
        if (!p.schema && !p.content) problems.push(`${at}: parameter ${p.name} has no schema`);
        if (seen.has(`${p.in}:${p.name}`)) problems.push(`${at}: parameter ${p.in} ${p.name} twice`);
        seen.add(`${p.in}:${p.name}`);
        if (p.in === 'path' && (p.required !== true || !templated.includes(p.name)))
          problems.push(`${at}: path parameter ${p.name} must be required and in the path`);
      }
      for (const name of templated) if (!params.some((p) => p.in === 'path' && p.name === name)) problems.push(`${at}: {${name}} is not declared`);
      for (const requirement of op.security ?? [])
        for (const name of Object.keys(requirement)) if (!(name in schemes)) problems.push(`${at}: security scheme '${name}' is not declared`);
    }
  }
  const found: Array<{ at: string; ref: string }> = [];
  refs(doc, '$', found);
  for (const { at, ref } of found) if (resolveRef(doc, ref) === undefined) problems.push(`${at}: $ref ${ref} does not resolve`);
  return problems;
}

/** Whether `value` has the shape `schema` documents (the OpenAPI 3.0 subset above). */
export function validate(doc: Json, schema: Json, value: unknown, at = '$'): string[] {
  if (schema?.$ref) {
    const target = resolveRef(doc, schema.$ref);
    return target ? validate(doc, target, value, at) : [`${at}: unresolved ${schema.$ref}`];
  }
  if (value === null) return schema.nullable || schema.enum?.includes(null) ? [] : [`${at}: null is not allowed`];
  const problems: string[] = [];
  for (const sub of schema.allOf ?? []) problems.push(...validate(doc, sub, value, at));
  if (schema.oneOf) {
    const passing = schema.oneOf.filter((sub: Json) => validate(doc, sub, value, at).length === 0).length;
    if (passing !== 1) problems.push(`${at}: matches ${passing} of oneOf, not exactly one`);
  }
  if (schema.anyOf && !schema.anyOf.some((sub: Json) => validate(doc, sub, value, at).length === 0)) problems.push(`${at}: matches none of anyOf`);
  if (schema.enum && !schema.enum.some((e: unknown) => JSON.stringify(e) === JSON.stringify(value)))
    problems.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  switch (schema.type) {
    case undefined:
      break;
    case 'integer':
      if (!Number.isInteger(value)) return [...problems, `${at}: ${JSON.stringify(value)} is not an integer`];
      break;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return [...problems, `${at}: ${JSON.stringify(value)} is not a number`];
      break;
    case 'string':
    case 'boolean':
      if (typeof value !== schema.type) return [...problems, `${at}: ${JSON.stringify(value)} is not a ${schema.type}`];
      break;
    case 'array':
      if (!Array.isArray(value)) return [...problems, `${at}: not an array`];
      break;
    case 'object':
      if (typeof value !== 'object' || Array.isArray(value)) return [...problems, `${at}: not an object`];
      break;
  }
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength) problems.push(`${at}: shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) problems.push(`${at}: longer than ${schema.maxLength}`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value))
      problems.push(`${at}: ${JSON.stringify(value)} does not match ${schema.pattern}`);
    if (schema.format === 'date-time' && (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(Date.parse(value)))) {
      problems.push(`${at}: ${JSON.stringify(value)} is not a date-time`);
    }
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) problems.push(`${at}: below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) problems.push(`${at}: above ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) problems.push(`${at}: fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) problems.push(`${at}: more than ${schema.maxItems} items`);
    if (schema.items) value.forEach((v, i) => problems.push(...validate(doc, schema.items, v, `${at}[${i}]`)));
  } else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    for (const name of schema.required ?? []) if (!(name in o)) problems.push(`${at}: '${name}' is required`);
    for (const [name, v] of Object.entries(o)) {
      if (schema.properties?.[name]) problems.push(...validate(doc, schema.properties[name], v, `${at}.${name}`));
      else if (schema.additionalProperties === false) problems.push(`${at}: '${name}' is not allowed`);
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
        problems.push(...validate(doc, schema.additionalProperties, v, `${at}.${name}`));
    }
  }
  return problems;
}

/** `/v1/pools/{id}/drain` → a RegExp for concrete paths (`/v1/pools/gpu-a/drain`). */
export function pathPattern(template: string): RegExp {
  const escaped = template.split(/\{[^}]+\}/).map((s) => s.replace(/[.*+?^$()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.join('[^/]+')}$`);
}

/** The operation that answers a concrete request path, if the document has one. */
export function findOperation(doc: Json, method: string, concretePath: string): Operation | undefined {
  const path = concretePath.split('?')[0];
  const candidates = operations(doc).filter((o) => o.method === method.toLowerCase() && pathPattern(o.path).test(path));
  // A literal segment beats a parameter (`/admin/workers/{id}` vs a longer literal path).
  return candidates.sort((a, b) => (b.path.match(/\{/g)?.length ?? 0) - (a.path.match(/\{/g)?.length ?? 0)).pop();
}

/** Problems of a real answer against the document: its status is documented and its JSON body has the documented shape. */
export function checkAnswer(doc: Json, method: string, path: string, status: number, contentType: string | null, body: string): string[] {
  const found = findOperation(doc, method, path);
  if (!found) return [`${method} ${path}: not in the document`];
  const response = found.op.responses[String(status)];
  if (!response) return [`${method} ${path}: status ${status} is not documented (${Object.keys(found.op.responses).join(', ')})`];
  const type = (contentType ?? '').split(';')[0].trim();
  const media = response.content?.[type];
  if (!media) return [`${method} ${path} ${status}: content type '${type}' is not documented`];
  if (type !== 'application/json') return validate(doc, media.schema, body, `${method} ${path} ${status}`);
  return validate(doc, media.schema, JSON.parse(body), `${method} ${path} ${status}`);
}
