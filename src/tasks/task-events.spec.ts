import { TaskEventLog } from './task-events';

describe('TaskEventLog', () => {
  it('numbers events from 1 and replays what comes after an id', () => {
    const log = new TaskEventLog(100, 10_000);
    log.append('started', { queue_position: 2, predicted_start_ms: null });
    log.append('token', { t: 'é', i: 0 });
    log.append('end', { tokens_out: 1 }, true);
    expect(log.lastId).toBe(3);
    expect(log.transcript()).toBe(
      'id: 1\nevent: started\ndata: {"queue_position":2,"predicted_start_ms":null}\n\n' +
        'id: 2\nevent: token\ndata: {"t":"é","i":0}\n\n' +
        'id: 3\nevent: end\ndata: {"tokens_out":1}\n\n',
    );
    expect(log.since(0)).toBe(log.transcript());
    expect(log.since(2)).toBe('id: 3\nevent: end\ndata: {"tokens_out":1}\n\n');
    expect(log.since(3)).toBe('');
    expect(log.since(99)).toBe('');
  });

  it('refuses events past its count or byte bound, but always keeps the terminal one', () => {
    const byCount = new TaskEventLog(2, 10_000);
    expect(byCount.append('token', { t: 'a', i: 0 })).toBeDefined();
    expect(byCount.append('token', { t: 'b', i: 1 })).toBeDefined();
    expect(byCount.append('token', { t: 'c', i: 2 })).toBeUndefined();
    expect(byCount.append('error', { code: 'stream_too_large' }, true)).toContain('id: 3\n');
    const frame = `id: 1\nevent: token\ndata: {"t":"${'ä'.repeat(10)}","i":0}\n\n`;
    // Bytes are UTF-8 bytes: 10 more than the frame's length here.
    const byBytes = new TaskEventLog(100, frame.length + 5);
    expect(byBytes.append('token', { t: 'ä'.repeat(10), i: 0 })).toBeUndefined();
    expect(byBytes.append('token', { t: 'a'.repeat(10), i: 0 })).toBe(frame.replace(/ä/g, 'a'));
    expect(byBytes.bytes).toBe(frame.length);
  });
});
