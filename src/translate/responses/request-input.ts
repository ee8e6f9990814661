import { Errors, GatewayError } from '../../common/gateway-error';
import type { Json } from '../dialect-codec';
import { isRecord, str } from './shapes';

const ROLES: Record<string, string> = { user: 'user', assistant: 'assistant', system: 'system', developer: 'system' };

/**
 * Builds chat `messages` from Responses `input` items, in order. Calls (`function_call`,
 * `custom_tool_call`, `local_shell_call`) join the assistant message just before them, so one turn's
 * text and calls stay one chat message; outputs become `role: tool` messages.
 */
export class InputMapper {
  readonly messages: Json[] = [];

  constructor(private readonly dropped: Set<string>) {}

  addInstructions(raw: unknown): GatewayError | undefined {
    if (raw === undefined || raw === null || raw === '') return undefined;
    if (typeof raw !== 'string') return Errors.invalidRequest('instructions must be a string', 'instructions');
    this.messages.push({ role: 'system', content: raw });
    return undefined;
  }

  addInput(raw: unknown): GatewayError | undefined {
    if (typeof raw === 'string') {
      this.messages.push({ role: 'user', content: raw });
      return undefined;
    }
    if (!Array.isArray(raw)) return Errors.invalidRequest('input must be a string or an array of input items', 'input');
    for (const [i, item] of raw.entries()) {
      const failed = this.addItem(item, `input[${i}]`);
      if (failed) return failed;
    }
    return undefined;
  }

  private addItem(item: unknown, where: string): GatewayError | undefined {
    if (!isRecord(item)) return Errors.invalidRequest(`${where} must be an object`, where);
    const type = item.type ?? 'message';
    switch (type) {
      case 'message':
        return this.addMessage(item, where);
      case 'function_call':
        return this.addCall(item, where, str(item.name), str(item.arguments));
      case 'custom_tool_call':
        // A freeform tool is sent to chat as a function taking one string `input` (request-tools.ts): its
        // past calls are written the same way, so the model sees the form it is asked to answer in.
        return this.addCall(item, where, str(item.name), JSON.stringify({ input: str(item.input) ?? '' }));
      case 'local_shell_call':
        return this.addCall(item, where, 'local_shell', JSON.stringify(item.action ?? {}));
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'local_shell_call_output':
        return this.addOutput(item, where);
      case 'item_reference':
        return Errors.invalidRequest(`${where}: item_reference is not supported: this gateway does not store responses; send the items themselves`, where);
      default:
        // `reasoning` items (and hosted tools' calls) carry nothing a chat backend can take back.
        this.dropped.add(`input items of type ${typeof type === 'string' ? type.slice(0, 64) : 'unknown'}`);
        return undefined;
    }
  }

  private addMessage(item: Json, where: string): GatewayError | undefined {
    const role = typeof item.role === 'string' ? ROLES[item.role] : undefined;
    if (role === undefined) return Errors.invalidRequest(`${where}.role must be one of user, assistant, system, developer`, `${where}.role`);
    const content = this.contentOf(item.content, `${where}.content`, role);
    if (content instanceof GatewayError) return content;
    this.messages.push({ role, content });
    return undefined;
  }

  /**
   * Chat content: a string for system and assistant messages (chat templates expect one there), and for a
   * user message made of one text; otherwise an array of `text` / `image_url` / `file` parts.
   */
  private contentOf(raw: unknown, where: string, role: string): string | Json[] | GatewayError {
    if (typeof raw === 'string') return raw;
    if (!Array.isArray(raw)) return Errors.invalidRequest(`${where} must be a string or an array of content parts`, where);
    const parts: Json[] = [];
    for (const [j, part] of raw.entries()) {
      if (!isRecord(part)) return Errors.invalidRequest(`${where}[${j}] must be an object`, `${where}[${j}]`);
      const mapped = this.partOf(part, `${where}[${j}]`);
      if (mapped instanceof GatewayError) return mapped;
      if (mapped) parts.push(mapped);
    }
    const texts = parts.every((p) => p.type === 'text');
    if (role !== 'user') {
      if (!texts) this.dropped.add(`non-text content of ${role} messages`);
      return parts
        .filter((p) => p.type === 'text')
        .map((p) => p.text)
        .join('\n');
    }
    return texts && parts.length === 1 ? (parts[0].text as string) : parts;
  }

  private partOf(part: Json, where: string): Json | GatewayError | undefined {
    switch (part.type) {
      case 'input_text':
      case 'output_text':
        if (typeof part.text !== 'string') return Errors.invalidRequest(`${where}.text must be a string`, `${where}.text`);
        return { type: 'text', text: part.text };
      case 'refusal':
        return { type: 'text', text: str(part.refusal) ?? '' };
      case 'input_image':
        return this.imageOf(part);
      case 'input_file':
        return this.fileOf(part);
      default:
        this.dropped.add(`content parts of type ${typeof part.type === 'string' ? part.type.slice(0, 64) : 'unknown'}`);
        return undefined;
    }
  }

  private imageOf(part: Json): Json | undefined {
    const url = str(part.image_url);
    if (url === undefined) {
      // A `file_id` names a file in OpenAI's store; this gateway has none to read it from.
      this.dropped.add('input_image parts without image_url');
      return undefined;
    }
    const image: Json = { url };
    if (typeof part.detail === 'string' && part.detail !== 'original') image.detail = part.detail;
    return { type: 'image_url', image_url: image };
  }

  private fileOf(part: Json): Json | undefined {
    const data = str(part.file_data);
    if (data?.startsWith('data:image/')) return { type: 'image_url', image_url: { url: data } };
    if (data === undefined && str(part.file_id) === undefined) {
      this.dropped.add('input_file parts by file_url');
      return undefined;
    }
    const file: Json = {};
    for (const key of ['file_data', 'file_id', 'filename']) if (typeof part[key] === 'string') file[key] = part[key];
    return { type: 'file', file };
  }

  private addCall(item: Json, where: string, name: string | undefined, args: string | undefined): GatewayError | undefined {
    const id = str(item.call_id) ?? str(item.id);
    if (id === undefined) return Errors.invalidRequest(`${where}.call_id must be a string`, `${where}.call_id`);
    if (name === undefined) return Errors.invalidRequest(`${where}.name must be a string`, `${where}.name`);
    const call = { id, type: 'function', function: { name, arguments: args ?? '' } };
    const last = this.messages[this.messages.length - 1];
    if (last?.role === 'assistant') {
      last.tool_calls = [...(Array.isArray(last.tool_calls) ? last.tool_calls : []), call];
    } else {
      this.messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    }
    return undefined;
  }

  private addOutput(item: Json, where: string): GatewayError | undefined {
    const id = str(item.call_id) ?? str(item.id);
    if (id === undefined) return Errors.invalidRequest(`${where}.call_id must be a string`, `${where}.call_id`);
    const content = this.outputText(item.output, `${where}.output`);
    if (content instanceof GatewayError) return content;
    this.messages.push({ role: 'tool', tool_call_id: id, content });
    return undefined;
  }

  /** A tool message's content is text in chat: an output given as parts keeps its texts. */
  private outputText(raw: unknown, where: string): string | GatewayError {
    if (typeof raw === 'string') return raw;
    if (raw === undefined || raw === null) return '';
    // Some clients send a tool's JSON result as an object: the model reads it as its JSON text.
    if (isRecord(raw)) return JSON.stringify(raw);
    if (!Array.isArray(raw)) return Errors.invalidRequest(`${where} must be a string or an array of content parts`, where);
    const texts: string[] = [];
    for (const part of raw) {
      if (isRecord(part) && (part.type === 'input_text' || part.type === 'output_text') && typeof part.text === 'string') texts.push(part.text);
      else this.dropped.add('non-text parts of tool outputs');
    }
    return texts.join('\n');
  }
}
