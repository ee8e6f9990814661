import { HttpResult } from './http';

function describe(res: HttpResult): string {
  return `status ${res.status}, content-type ${String(res.headers['content-type'])}, body ${res.text.slice(0, 600)}`;
}

function jsonBody(res: HttpResult): any {
  try {
    return JSON.parse(res.text);
  } catch {
    throw new Error(`expected a JSON error body; got ${describe(res)}`);
  }
}

/**
 * Asserts an OpenAI-dialect gateway error: status, JSON content type and
 * `{"error":{"message","type","code","retriable",...}}`. Returns the `error` object.
 */
export function expectOpenAiError(res: HttpResult, status: number, code: string): any {
  const ctx = describe(res);
  expect({ status: res.status, ctx }).toEqual({ status, ctx });
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  const body = jsonBody(res);
  expect(body).toEqual(
    expect.objectContaining({
      error: expect.objectContaining({ code, message: expect.any(String), type: expect.any(String), retriable: expect.any(Boolean) }),
    }),
  );
  expect(body.type).toBeUndefined();
  return body.error;
}

/** Asserts an Anthropic-dialect error: `{"type":"error","error":{"type","message","code","retriable"}}`. */
export function expectAnthropicError(res: HttpResult, status: number, code: string): any {
  const ctx = describe(res);
  expect({ status: res.status, ctx }).toEqual({ status, ctx });
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  const body = jsonBody(res);
  expect(body).toEqual(
    expect.objectContaining({
      type: 'error',
      error: expect.objectContaining({ type: expect.any(String), message: expect.any(String), code, retriable: expect.any(Boolean) }),
    }),
  );
  return body.error;
}
