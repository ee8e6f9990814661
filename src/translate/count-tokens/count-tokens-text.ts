import type { Json } from '../dialect-codec';
import { arr, isObj, obj, str } from '../anthropic/shape';

/** The text of one content block as a tokenizer should see it (tool calls and results by their JSON and text). */
function blockText(block: unknown): string {
  if (typeof block === 'string') return block;
  if (!isObj(block)) return '';
  if (block.type === 'text') return str(block.text) ?? '';
  if (block.type === 'thinking') return str(block.thinking) ?? '';
  if (block.type === 'tool_use') return `${str(block.name) ?? ''} ${JSON.stringify(block.input ?? {})}`;
  if (block.type === 'tool_result') return contentText(block.content);
  if (block.type === 'document') {
    const source = obj(block.source);
    if (source?.type === 'text') return str(source.data) ?? '';
    if (source?.type === 'content') return contentText(source.content);
  }
  // Images and binary documents have no text: a text tokenizer cannot count them.
  return '';
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return (arr(content) ?? [])
    .map(blockText)
    .filter((t) => t !== '')
    .join('\n');
}

/**
 * One text for an Anthropic count_tokens body: the system prompt, each message's text (as `role: text`)
 * and each tool definition as JSON. It approximates what the chat template will render; the count
 * is that text's tokens, without the template's own markup.
 */
export function countTokensText(body: Json): string {
  const parts: string[] = [];
  const system = isObj(body) ? body.system : undefined;
  const systemText = contentText(system);
  if (systemText !== '') parts.push(systemText);
  for (const message of arr(isObj(body) ? body.messages : undefined) ?? []) {
    if (!isObj(message)) continue;
    const text = contentText(message.content);
    if (text !== '') parts.push(`${str(message.role) ?? 'user'}: ${text}`);
  }
  for (const tool of arr(isObj(body) ? body.tools : undefined) ?? []) {
    if (!isObj(tool)) continue;
    parts.push(JSON.stringify({ name: tool.name, description: tool.description, input_schema: tool.input_schema }));
  }
  return parts.join('\n');
}

/** The router's estimate when no worker can tokenize: a quarter of the characters, at least 1. */
export function estimateInputTokens(body: Json): number {
  return Math.max(1, Math.ceil(countTokensText(body).length / 4));
}
