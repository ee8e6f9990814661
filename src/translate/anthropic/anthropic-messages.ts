import { Errors, GatewayError } from '../../common/gateway-error';
import { placeSystemMessages } from '../system-messages';
import { arr, isObj, obj, Obj, str } from './shape';

/** One chat-completions message as the backend reads it. */
export type ChatMessage = Obj;

type Part = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/** Where the mapping of one message records what chat completions cannot carry. */
interface Sink {
  dropped: Set<string>;
}

/** The text of an Anthropic `system` (a string or text blocks); other blocks are dropped. */
export function systemText(system: unknown, sink: Sink): string | undefined {
  if (typeof system === 'string') return system;
  const blocks = arr(system);
  if (!blocks) {
    if (system !== undefined && system !== null) sink.dropped.add('system (not a string or blocks)');
    return undefined;
  }
  const texts: string[] = [];
  for (const block of blocks) {
    const text = isObj(block) && block.type === 'text' ? str(block.text) : undefined;
    if (text === undefined) sink.dropped.add('system[] non-text block');
    else texts.push(text);
  }
  noteCacheControl(blocks, sink);
  return texts.join('\n\n');
}

/** `cache_control` is a hint for Anthropic's prompt cache; backends cache prefixes on their own. */
function noteCacheControl(blocks: unknown[], sink: Sink): void {
  if (blocks.some((b) => isObj(b) && b.cache_control !== undefined)) sink.dropped.add('cache_control');
}

/** A `data:` URL for base64 sources, the URL for URL sources; files (Anthropic's Files API) have no meaning here. */
function imageUrl(block: Obj, sink: Sink): string | undefined {
  const source = obj(block.source);
  if (source?.type === 'base64' && typeof source.data === 'string') {
    const mediaType = str(source.media_type) ?? 'image/png';
    return `data:${mediaType};base64,${source.data}`;
  }
  if (source?.type === 'url' && typeof source.url === 'string') return source.url;
  sink.dropped.add(`image source ${String(source?.type ?? 'missing')}`);
  return undefined;
}

/** Text documents become text (titled when they have a title); PDFs and files cannot be read by a chat backend. */
function documentText(block: Obj, sink: Sink): string | undefined {
  const source = obj(block.source);
  let text: string | undefined;
  if (source?.type === 'text') text = str(source.data);
  else if (source?.type === 'content') {
    const content = source.content;
    if (typeof content === 'string') text = content;
    else
      text = arr(content)
        ?.map((b) => (isObj(b) && b.type === 'text' ? (str(b.text) ?? '') : ''))
        .join('\n');
  }
  if (text === undefined) {
    sink.dropped.add(`document source ${String(source?.type ?? 'missing')}`);
    return undefined;
  }
  const title = str(block.title);
  return title ? `${title}\n\n${text}` : text;
}

/** Content parts of user-side blocks (text, image, document); anything else is named in `dropped`. */
function userPart(block: unknown, where: string, sink: Sink): Part | undefined {
  if (!isObj(block)) {
    sink.dropped.add(`${where} (not a block)`);
    return undefined;
  }
  if (block.type === 'text') {
    const text = str(block.text);
    return text === undefined ? undefined : { type: 'text', text };
  }
  if (block.type === 'image') {
    const url = imageUrl(block, sink);
    return url === undefined ? undefined : { type: 'image_url', image_url: { url } };
  }
  if (block.type === 'document') {
    const text = documentText(block, sink);
    return text === undefined ? undefined : { type: 'text', text };
  }
  sink.dropped.add(`${where} block ${String(block.type)}`);
  return undefined;
}

/** Plain text when every part is text (every backend reads a string; not all read part arrays). */
function chatContent(parts: Part[]): string | Part[] {
  return parts.every((p) => p.type === 'text') ? parts.map((p) => (p as { text: string }).text).join('\n') : parts;
}

/**
 * A `tool_result` as a `tool` message. Chat has no error flag, so a failed tool says so in its text;
 * images cannot ride in a tool message on most backends and go to the user message that follows.
 */
function toolMessage(block: Obj, images: Part[], sink: Sink): ChatMessage {
  const parts: string[] = [];
  if (typeof block.content === 'string') parts.push(block.content);
  for (const inner of arr(block.content) ?? []) {
    const part = userPart(inner, 'tool_result content', sink);
    if (part?.type === 'text') parts.push(part.text);
    else if (part) images.push(part);
  }
  const text = parts.join('\n');
  return { role: 'tool', tool_call_id: str(block.tool_use_id) ?? '', content: block.is_error === true ? `Error: ${text}` : text };
}

/** A user turn: its tool results first (chat wants them right after the assistant's calls), then the rest. */
function userMessages(content: unknown[], sink: Sink): ChatMessage[] {
  const tools: ChatMessage[] = [];
  const parts: Part[] = [];
  for (const block of content) {
    if (isObj(block) && block.type === 'tool_result') tools.push(toolMessage(block, parts, sink));
    else {
      const part = userPart(block, 'user content', sink);
      if (part) parts.push(part);
    }
  }
  noteCacheControl(content, sink);
  return parts.length > 0 ? [...tools, { role: 'user', content: chatContent(parts) }] : tools;
}

/** An assistant turn: text joined, `tool_use` as tool calls (ids kept), thinking from earlier turns dropped. */
function assistantMessage(content: unknown[], sink: Sink): ChatMessage {
  const texts: string[] = [];
  const calls: Obj[] = [];
  for (const block of content) {
    if (isObj(block) && block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
    else if (isObj(block) && block.type === 'tool_use') {
      const input = block.input === undefined ? {} : block.input;
      calls.push({ id: str(block.id) ?? '', type: 'function', function: { name: str(block.name) ?? '', arguments: JSON.stringify(input) } });
    } else sink.dropped.add(`assistant content block ${isObj(block) ? String(block.type) : '(not a block)'}`);
  }
  noteCacheControl(content, sink);
  const message: ChatMessage = { role: 'assistant', content: texts.length > 0 ? texts.join('') : calls.length > 0 ? null : '' };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

/** The chat messages for one Anthropic message, or an error naming the field when its shape is wrong. */
function messagesOf(message: unknown, i: number, sink: Sink): ChatMessage[] | GatewayError {
  if (!isObj(message)) return Errors.invalidRequest(`messages.${i}: must be an object`, `messages.${i}`);
  const role = message.role;
  const content = message.content;
  if (role !== 'user' && role !== 'assistant' && role !== 'system') {
    return Errors.invalidRequest(`messages.${i}.role: must be "user" or "assistant"`, `messages.${i}.role`);
  }
  if (typeof content === 'string') return [{ role, content }];
  const blocks = arr(content);
  if (!blocks) return Errors.invalidRequest(`messages.${i}.content: must be a string or an array of blocks`, `messages.${i}.content`);
  if (role === 'assistant') return [assistantMessage(blocks, sink)];
  if (role === 'system') {
    // In-conversation system notes: placed where chat templates accept them by `chatMessages`.
    return [{ role: 'system', content: systemText(blocks, sink) ?? '' }];
  }
  return userMessages(blocks, sink);
}

/**
 * The chat message list for `system` + `messages`. System text before the first turn is merged into one
 * leading system message, and a system message later on is folded into a user message (`placeSystemMessages`).
 */
export function chatMessages(system: unknown, messages: unknown, sink: Sink): ChatMessage[] | GatewayError {
  const list = arr(messages);
  if (!list) return Errors.invalidRequest('messages: must be an array', 'messages');
  const out: ChatMessage[] = [];
  const top = systemText(system, sink);
  if (top) out.push({ role: 'system', content: top });
  for (let i = 0; i < list.length; i++) {
    const mapped = messagesOf(list[i], i, sink);
    if (mapped instanceof GatewayError) return mapped;
    out.push(...mapped);
  }
  return placeSystemMessages(out);
}
