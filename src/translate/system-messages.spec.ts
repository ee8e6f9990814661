import { GatewayError } from '../common/gateway-error';
import { anthropicCodec } from './anthropic/anthropic.codec';
import type { Json } from './dialect-codec';
import { responsesCodec } from './responses/codec';

function chatOf(codec: typeof anthropicCodec, body: Json): Json {
  const result = codec.toChat(body, false);
  if (result instanceof GatewayError) throw result;
  return result.body;
}

const anthropic = (messages: Json[], system?: string): unknown =>
  chatOf(anthropicCodec, { model: 'm', max_tokens: 10, ...(system ? { system } : {}), messages }).messages;
const responses = (input: Json[], instructions?: string): unknown =>
  chatOf(responsesCodec, { model: 'm', ...(instructions ? { instructions } : {}), input }).messages;

/** Chat templates (Gemma, Mistral) accept one system message, and only at the start. */
describe('system messages as chat templates accept them', () => {
  it('Responses: instructions and leading developer items become one system message', () => {
    expect(
      responses(
        [
          { type: 'message', role: 'developer', content: '<permissions>' },
          { type: 'message', role: 'system', content: [{ type: 'input_text', text: '<sandbox>' }] },
          { type: 'message', role: 'user', content: 'hi' },
        ],
        'You are Codex.',
      ),
    ).toEqual([
      { role: 'system', content: 'You are Codex.\n\n<permissions>\n\n<sandbox>' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it('Responses: a developer item after the first turn goes into the next user message as a <system-reminder>', () => {
    expect(
      responses([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'developer', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'more' },
            { type: 'input_image', image_url: 'data:image/png;base64,AA==' },
          ],
        },
      ]),
    ).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
      {
        role: 'user',
        content: [
          { type: 'text', text: '<system-reminder>\nBe brief.\n</system-reminder>' },
          { type: 'text', text: 'more' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } },
        ],
      },
    ]);
  });

  it('Anthropic: a system message with no user message after it goes to the end of the previous user message', () => {
    expect(
      anthropic(
        [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'hello' },
          { role: 'system', content: 'Wrap up.' },
        ],
        'Top.',
      ),
    ).toEqual([
      { role: 'system', content: 'Top.' },
      { role: 'user', content: 'hi\n\n<system-reminder>\nWrap up.\n</system-reminder>' },
      { role: 'assistant', content: 'hello' },
    ]);
  });

  it('keeps a lone system message when there is no user message to carry it', () => {
    expect(
      anthropic([
        { role: 'assistant', content: 'a' },
        { role: 'system', content: 'note' },
      ]),
    ).toEqual([
      { role: 'assistant', content: 'a' },
      { role: 'system', content: 'note' },
    ]);
  });
});
