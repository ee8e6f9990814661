import type { Json } from './dialect-codec';

/** How a system note from later in the conversation is put into a user message. */
export function systemReminder(text: string): string {
  return `<system-reminder>\n${text}\n</system-reminder>`;
}

function textOf(content: unknown): string {
  return typeof content === 'string' ? content : '';
}

function withText(content: unknown, text: string, before: boolean): unknown {
  if (Array.isArray(content)) {
    const part = { type: 'text', text };
    return before ? [part, ...content] : [...content, part];
  }
  const own = textOf(content);
  if (own === '') return text;
  return before ? `${text}\n\n${own}` : `${own}\n\n${text}`;
}

/**
 * Chat templates (Gemma, Mistral, Llama's strict ones) accept one system message, and only first: more
 * raise "system message must be at the beginning" or "roles must alternate". So the system messages
 * before the first turn are merged into one (joined with a blank line), and a system message that comes
 * later is folded into the next user message, wrapped in `<system-reminder>` (as Claude Code itself
 * writes such notes); when no user message follows, into the previous one. With no user message at all
 * it stays a system message. System contents are strings here (both codecs map them to text).
 */
export function placeSystemMessages(messages: Json[]): Json[] {
  const out: Json[] = [];
  const leading: string[] = [];
  let i = 0;
  for (; i < messages.length && messages[i].role === 'system'; i++) leading.push(textOf(messages[i].content));
  if (leading.length > 0) out.push({ role: 'system', content: leading.join('\n\n') });
  let pending: string[] = [];
  let lastUser: Json | undefined;
  for (; i < messages.length; i++) {
    const message = messages[i];
    if (message.role === 'system') {
      pending.push(textOf(message.content));
      continue;
    }
    if (message.role === 'user') {
      lastUser = { ...message };
      if (pending.length > 0) lastUser.content = withText(lastUser.content, systemReminder(pending.join('\n\n')), true);
      pending = [];
      out.push(lastUser);
    } else out.push(message);
  }
  if (pending.length > 0) {
    const reminder = systemReminder(pending.join('\n\n'));
    if (lastUser) lastUser.content = withText(lastUser.content, reminder, false);
    else out.push({ role: 'system', content: pending.join('\n\n') });
  }
  return out;
}
