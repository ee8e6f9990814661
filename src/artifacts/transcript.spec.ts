import { boundTranscript } from './transcript';

const event = (i: number, text = `token ${i}`) => `id: ${i}\nevent: token\ndata: ${JSON.stringify({ t: text, i })}\n\n`;
const STARTED = 'id: 0\nevent: started\ndata: {"queue_position":0,"predicted_start_ms":0}\n\n';
const END = 'id: 999\nevent: end\ndata: {"tokens_out":998,"decode_time_ms":5,"decode_ms":5}\n\n';

function transcript(events: number): string {
  return STARTED + Array.from({ length: events }, (_, i) => event(i + 1)).join('') + END;
}

/** The events of an SSE text: blocks between blank lines, comments included. */
const blocks = (text: string) => text.split('\n\n').filter(Boolean);

describe('boundTranscript', () => {
  it('keeps a transcript within the bound as it is', () => {
    const text = transcript(3);
    expect(boundTranscript(text, 10_000)).toEqual({ text, bytes: Buffer.byteLength(text), originalBytes: Buffer.byteLength(text), truncated: false });
  });

  it('cuts a longer one to the bound, keeping the first and last events whole and saying how much is missing', () => {
    const text = transcript(2000);
    const total = Buffer.byteLength(text);
    const out = boundTranscript(text, 4096);
    expect(out.truncated).toBe(true);
    expect(out.originalBytes).toBe(total);
    expect(out.bytes).toBe(Buffer.byteLength(out.text));
    expect(out.bytes).toBeLessThanOrEqual(4096);
    expect(out.text.startsWith(STARTED)).toBe(true);
    expect(out.text.endsWith(END)).toBe(true);
    const marker = blocks(out.text).find((b) => b.startsWith(': transcript truncated'));
    const omitted = Number(/(\d+) bytes omitted/.exec(marker ?? '')?.[1]);
    // Every byte is either kept or counted as omitted (the marker adds its own).
    expect(out.bytes - Buffer.byteLength(`${marker}\n\n`) + omitted).toBe(total);
    // Still an event stream: every block but the marker is a whole event.
    for (const b of blocks(out.text).filter((b) => b !== marker)) expect(b).toMatch(/^id: \d+\nevent: \w+\ndata: \{.*\}$/);
  });

  it('never splits a multi-byte character, even inside one event larger than the bound', () => {
    const huge = `id: 1\nevent: token\ndata: ${JSON.stringify({ t: '日本語'.repeat(5000), i: 0 })}\n\n`;
    const out = boundTranscript(huge, 2048);
    expect(out.truncated).toBe(true);
    expect(out.bytes).toBeLessThanOrEqual(2048);
    expect(out.text).not.toContain('\uFFFD');
    expect(Buffer.from(out.text, 'utf8').toString('utf8')).toBe(out.text);
    expect(out.text).toMatch(/\n\n: transcript truncated, \d+ bytes omitted\n\n/);
  });

  it('replaces NUL characters, which PostgreSQL text cannot hold', () => {
    expect(boundTranscript('data: a\u0000b\n\n', 100).text).toBe('data: a\uFFFDb\n\n');
  });
});
