/**
 * What a request needs from a worker, read from its parsed body. Extraction never throws: a field
 * of the wrong shape counts as "not needing" that capability, and the backend reports the real error.
 */
export interface RequestRequirements {
  vision: boolean;
  tools: boolean;
  jsonMode: boolean;
  /** Text characters / 4 (text parts only), compared with a model's context length. */
  estimatedTokens: number;
  /** The endpoint path the request was sent to; a worker that does not serve it is excluded. */
  endpoint: string;
}

type Json = Record<string, unknown>;

const JSON_FORMATS = new Set(['json_object', 'json_schema']);

export function extractRequirements(endpoint: string, body: Json): RequestRequirements {
  const req: RequestRequirements = {
    vision: false,
    tools: Array.isArray(body.tools) && body.tools.length > 0,
    jsonMode: false,
    estimatedTokens: 0,
    endpoint,
  };
  const text = { chars: 0 };
  switch (endpoint) {
    case '/v1/chat/completions':
      req.vision = scanMessages(body.messages, 'image_url', text);
      req.jsonMode = JSON_FORMATS.has(typeOf(body.response_format));
      break;
    case '/v1/completions':
      countText(body.prompt, text);
      req.jsonMode = JSON_FORMATS.has(typeOf(body.response_format));
      break;
    case '/v1/responses':
      countText(body.instructions, text);
      if (typeof body.input === 'string') text.chars += body.input.length;
      else req.vision = scanMessages(body.input, 'input_image', text);
      req.jsonMode = isObject(body.text) && JSON_FORMATS.has(typeOf(body.text.format));
      break;
    case '/v1/messages':
    case '/v1/messages/count_tokens':
      countContent(body.system, 'image', text);
      req.vision = scanMessages(body.messages, 'image', text);
      break;
    case '/v1/embeddings':
      countText(body.input, text);
      break;
  }
  req.estimatedTokens = Math.floor(text.chars / 4);
  return req;
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeOf(v: unknown): string {
  return isObject(v) && typeof v.type === 'string' ? v.type : '';
}

/** Counts the text of every message and tells whether any content part has the image type. */
function scanMessages(messages: unknown, imageType: string, text: { chars: number }): boolean {
  if (!Array.isArray(messages)) return false;
  let image = false;
  for (const m of messages) {
    if (isObject(m) && countContent(m.content, imageType, text)) image = true;
  }
  return image;
}

/** A content field: a string, or a list of typed parts whose text parts count. */
function countContent(content: unknown, imageType: string, text: { chars: number }): boolean {
  if (typeof content === 'string') {
    text.chars += content.length;
    return false;
  }
  if (!Array.isArray(content)) return false;
  let image = false;
  for (const part of content) {
    if (!isObject(part)) continue;
    if (part.type === imageType) image = true;
    else if (typeof part.text === 'string') text.chars += part.text.length;
  }
  return image;
}

/** A prompt or input: a string or a list of strings (token arrays are not text and do not count). */
function countText(value: unknown, text: { chars: number }): void {
  if (typeof value === 'string') text.chars += value.length;
  else if (Array.isArray(value)) for (const v of value) if (typeof v === 'string') text.chars += v.length;
}
