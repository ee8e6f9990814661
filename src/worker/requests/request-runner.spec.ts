import { StringDecoder } from 'node:string_decoder';
import { utf8Cut } from './request-runner';

describe('utf8Cut', () => {
  const text = 'aé日🚀b€𝄞ñ'; // 1-, 2-, 3- and 4-byte characters next to each other
  const bytes = Buffer.from(text, 'utf8');

  it('never cuts inside a character and gives up at most 3 bytes of the limit', () => {
    for (let max = 1; max < bytes.length; max++) {
      const cut = utf8Cut(bytes, max);
      expect(cut).toBeLessThanOrEqual(max);
      expect(cut).toBeGreaterThanOrEqual(max - 3);
      const decoder = new StringDecoder('utf8');
      const head = decoder.write(bytes.subarray(0, cut));
      // A cut on a character boundary leaves nothing pending in the decoder.
      expect(decoder.end()).toBe('');
      expect(head + bytes.subarray(cut).toString('utf8')).toBe(text);
    }
  });

  it('cuts at the limit when the bytes there are not UTF-8 at all', () => {
    const junk = Buffer.from([0x61, 0x80, 0x80, 0x80, 0x80, 0x80, 0x62]);
    expect(utf8Cut(junk, 5)).toBe(5);
  });
});
