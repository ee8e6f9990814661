import { encodeCancel, encodeRefusal, encodeRequest, isLinkControl, LinkRequestHead, readCallerMessage, readRefusal } from './link-protocol';

const head: LinkRequestHead = { t: 'req', id: 'r-1', worker: 'w-1', model: 'm', endpoint_path: '/v1/chat/completions', is_streaming: true };

describe('the link between replicas: its messages', () => {
  it('carries a request as a line of head and the body untouched (a body may hold newlines and any bytes)', () => {
    const body = '{"model":"m",\n"messages":[{"role":"user","content":"line1\\nline2 é"}]}';
    expect(readCallerMessage(encodeRequest({ ...head, headers: { 'x-a': 'b' } }, body))).toEqual({ head: { ...head, headers: { 'x-a': 'b' } }, body });
    expect(readCallerMessage(encodeCancel('r-1'))).toEqual({ cancel: 'r-1' });
  });

  it.each([
    ['not JSON', 'hello\n{}'],
    ['no body line', JSON.stringify(head)],
    ['an unknown kind', '{"t":"other","id":"x"}\n{}'],
    ['a missing worker', JSON.stringify({ ...head, worker: undefined }) + '\n{}'],
    ['an id too long', JSON.stringify({ ...head, id: 'x'.repeat(257) }) + '\n{}'],
    ['a relative endpoint', JSON.stringify({ ...head, endpoint_path: 'v1/x' }) + '\n{}'],
    ['streaming not a boolean', JSON.stringify({ ...head, is_streaming: 'yes' }) + '\n{}'],
    ['headers that are not strings', JSON.stringify({ ...head, headers: { a: 1 } }) + '\n{}'],
    ['an array', '[]\n{}'],
    ['a cancel with a body', '{"t":"cancel","id":"x"}\n{}'],
  ])('refuses a request with %s', (_why, text) => {
    expect(readCallerMessage(text)).toBeUndefined();
  });

  it("sets the link's own messages apart from any worker frame, whatever keys a worker put first", () => {
    const refusal = encodeRefusal('r-1', 'slot_taken');
    expect(isLinkControl(refusal)).toBe(true);
    expect(readRefusal(refusal)).toEqual({ id: 'r-1', code: 'slot_taken' });
    // A worker's frame re-serialised by the owner is a JSON object: never taken for a refusal.
    const crafted = JSON.stringify({ t: 'refused', id: 'victim', code: 'slot_taken', type: 'response_chunk', request_id: 'own', chunk: '' });
    expect(isLinkControl(crafted)).toBe(false);
    expect(readRefusal('!{"t":"refused","id":"r-2","code":"anything"}')).toEqual({ id: 'r-2', code: 'malformed' });
    expect(readRefusal('!{"t":"refused"}')).toBeUndefined();
  });
});
