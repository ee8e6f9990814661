import { MAX_SSE_LINE, SseLines } from './sse-lines';

/** Everything the reader yields for this text given in pieces of `size` characters, and its end. */
function read(text: string, size = text.length || 1): string[] {
  const reader = new SseLines();
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(...reader.push(text.slice(i, i + size)));
  return [...out, ...reader.end()];
}

describe('SseLines', () => {
  it('yields each event’s data whatever the cuts and line ends (\\n, \\r\\n, \\r, and \\r|\\n split across pushes)', () => {
    const events = ['{"a":1}', '{"b":"x\\ny"}', '[DONE]'];
    for (const eol of ['\n', '\r\n', '\r']) {
      const text = `: ping${eol}event: e${eol}data: ${events[0]}${eol}${eol}data:${events[1]}${eol}id: 3${eol}${eol}data: ${events[2]}${eol}${eol}`;
      for (const size of [1, 2, 3, 7, text.length]) expect(read(text, size)).toEqual(events);
    }
    expect(read('data: a\ndata: b\n\n')).toEqual(['a\nb']);
    // A last event whose blank line never came still counts.
    expect(read('data: tail')).toEqual(['tail']);
  });

  it('stops at a line of 2 MiB with no line end: overflowed, nothing held, nothing more read', () => {
    const reader = new SseLines();
    const piece = 'x'.repeat(64 * 1024);
    expect(reader.push('data: {"ok":1}\n\ndata: ')).toEqual(['{"ok":1}']);
    for (let sent = 0; sent < 2 * 1024 * 1024; sent += piece.length) reader.push(piece);
    expect(reader.overflowed).toBe(true);
    // Released: the reader keeps no part of the 2 MiB.
    expect((reader as unknown as { pending: string }).pending).toBe('');
    expect(reader.push('\n\ndata: {"late":1}\n\n')).toEqual([]);
    expect(reader.end()).toEqual([]);
  });

  it('stops at an event whose data lines together pass the cap, and at one whole line past it', () => {
    const line = `data: ${'y'.repeat(MAX_SSE_LINE / 4)}\n`;
    const many = new SseLines();
    many.push(line.repeat(5));
    expect(many.overflowed).toBe(true);
    const whole = new SseLines();
    expect(whole.push(`data: ${'z'.repeat(MAX_SSE_LINE + 1)}\n\n`)).toEqual([]);
    expect(whole.overflowed).toBe(true);
    // Just under the cap is an ordinary event.
    const under = new SseLines();
    expect(under.push(`data: ${'w'.repeat(MAX_SSE_LINE - 10)}\n\n`)).toHaveLength(1);
    expect(under.overflowed).toBe(false);
  });

  it('reads 8 MiB of events in 64 KiB pushes (each push scanned once, not from the start)', () => {
    const event = `data: ${JSON.stringify({ choices: [{ delta: { content: 'x'.repeat(200) } }] })}\n\n`;
    const text = event.repeat(Math.ceil((8 * 1024 * 1024) / event.length));
    const events = read(text, 64 * 1024);
    expect(events).toHaveLength(Math.ceil((8 * 1024 * 1024) / event.length));
    expect(new Set(events).size).toBe(1);
  });
});
