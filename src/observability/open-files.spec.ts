import { openFilesWarning, parseSoftOpenFilesLimit, readSoftOpenFilesLimit, requiredOpenFiles } from './open-files';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max processes             96365                96365                processes
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('open-files limit check', () => {
  it('reads the soft limit from /proc/self/limits text', () => {
    expect(parseSoftOpenFilesLimit(LIMITS)).toBe(1024);
    expect(parseSoftOpenFilesLimit(LIMITS.replace('1024 ', 'unlimited '))).toBe(Infinity);
    expect(parseSoftOpenFilesLimit('Limit  Soft Limit\nMax processes 10 10 processes\n')).toBeUndefined();
    expect(parseSoftOpenFilesLimit('Max open files  lots  lots  files')).toBeUndefined();
  });

  it('needs one descriptor per queued client plus the worker allowance and headroom', () => {
    expect(requiredOpenFiles([])).toBe(1024 + 256);
    expect(requiredOpenFiles([100, 0, 2000])).toBe(2100 + 1024 + 256);
  });

  it('warns only when the limit is known and below what the configuration needs', () => {
    const warning = openFilesWarning(1024, [100]);
    expect(warning).toContain('ulimit -n) is 1024, below the 1380');
    expect(warning).toContain('LimitNOFILE=');
    expect(openFilesWarning(1380, [100])).toBeUndefined();
    expect(openFilesWarning(Infinity, [1_000_000])).toBeUndefined();
    expect(openFilesWarning(undefined, [1_000_000])).toBeUndefined();
  });

  it('skips silently where /proc/self/limits does not exist or cannot be read', () => {
    const read = jest.fn(() => LIMITS);
    expect(readSoftOpenFilesLimit('darwin', read)).toBeUndefined();
    expect(read).not.toHaveBeenCalled();
    expect(readSoftOpenFilesLimit('linux', read)).toBe(1024);
    expect(
      readSoftOpenFilesLimit('linux', () => {
        throw new Error('ENOENT');
      }),
    ).toBeUndefined();
  });
});
