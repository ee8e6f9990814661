import { GatewayError } from '../../common/gateway-error';
import type { Json } from '../dialect-codec';
import { responsesCodec } from './codec';

describe('responses codec: reasoning.effort as chat backends accept it (low, medium, high)', () => {
  const effort = (value: unknown): { body: Json; dropped: string[] } => {
    const result = responsesCodec.toChat({ model: 'm', input: 'x', reasoning: { effort: value } }, false);
    if (result instanceof GatewayError) throw result;
    return result;
  };

  it.each([
    ['minimal', 'low'],
    ['low', 'low'],
    ['medium', 'medium'],
    ['high', 'high'],
    ['xhigh', 'high'],
  ])('sends %s as %s', (given, sent) => {
    expect(effort(given).body.reasoning_effort).toBe(sent);
  });

  it('turns none into no reasoning (enable_thinking false), and drops an unknown value, naming it', () => {
    const none = effort('none');
    expect(none.body.reasoning_effort).toBeUndefined();
    expect(none.body.chat_template_kwargs).toEqual({ enable_thinking: false });
    const odd = effort('turbo');
    expect(odd.body.reasoning_effort).toBeUndefined();
    expect(odd.dropped).toContain('reasoning.effort (turbo)');
  });
});
