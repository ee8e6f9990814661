/**
 * Contract: "Capability advertisement" — register first, register_ack with worker id, sanitized
 * model list and warnings; protocol version negotiation; protocol errors close with 1002.
 */
import { useScope } from './support/scope';
import { PROTOCOL_VERSION } from './support/target';
import { ScriptedWorker } from './support/worker';
import { uniqueModel } from './support/util';

const PROTOCOL_ERROR = { code: 1002, reason: 'worker registration protocol error' };

async function expectProtocolError(w: ScriptedWorker): Promise<void> {
  const info = await w.closed;
  expect({ code: info.code, reason: info.reason }).toEqual(PROTOCOL_ERROR);
}

describe('worker registration', () => {
  const scope = useScope();

  test('register_ack carries the worker id, the accepted models and echoes the protocol version', async () => {
    const models = [uniqueModel('reg'), uniqueModel('reg')];
    const w = await scope.connect();
    const ack = await w.register({ models, protocol_version: PROTOCOL_VERSION });
    expect(ack).toEqual({ type: 'register_ack', worker_id: expect.any(String), models, protocol_version: PROTOCOL_VERSION });
  });

  test('a first frame other than register closes the socket: 1002 "worker registration protocol error"', async () => {
    const w = await scope.connect();
    w.send({ type: 'pong', current_load: 0 });
    await expectProtocolError(w);
    expect(w.all('register_ack')).toHaveLength(0);
  });

  test('a first frame that is not JSON closes the socket with 1002', async () => {
    const w = await scope.connect();
    w.sendRaw('this is not json');
    await expectProtocolError(w);
  });

  test('a register frame missing required fields closes the socket with 1002', async () => {
    const w = await scope.connect();
    w.send({ type: 'register', worker_name: 'no-models', max_concurrent: 1 });
    await expectProtocolError(w);
  });

  test('a mismatched protocol_version closes the socket with 1002', async () => {
    const w = await scope.connect();
    w.send(w.registerFrame({ models: [uniqueModel('reg')], protocol_version: '1999-01-bridge-v0' }));
    await expectProtocolError(w);
    expect(w.all('register_ack')).toHaveLength(0);
  });

  test('a legacy worker without protocol_version is accepted and the ack omits protocol_version', async () => {
    const model = uniqueModel('legacy');
    const w = await scope.connect();
    const ack = await w.register({ models: [model], protocol_version: null });
    expect(ack.models).toEqual([model]);
    expect(Object.prototype.hasOwnProperty.call(ack, 'protocol_version')).toBe(false);
  });

  test('null optional fields are treated as absent (legacy worker, no current_load)', async () => {
    const model = uniqueModel('nulls');
    const w = await scope.connect();
    w.send({ type: 'register', worker_name: 'nulls', models: [model], max_concurrent: 1, protocol_version: null, current_load: null });
    const ack = await w.next('register_ack');
    expect(ack.models).toEqual([model]);
    expect(Object.prototype.hasOwnProperty.call(ack, 'protocol_version')).toBe(false);
  });

  test('unknown extra fields in register are ignored', async () => {
    const model = uniqueModel('extra');
    const w = await scope.connect();
    const ack = await w.register({ models: [model], extra: { gpu: 'h100', labels: { zone: 'a' } } });
    expect(ack.models).toEqual([model]);
  });

  test('sanitization: trims names, drops empties, de-duplicates keeping first-seen order, caps at the provider limit with warnings', async () => {
    const p = await scope.provider({ max_models: 3 }, 'cap');
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((x) => uniqueModel(`san-${x}`));
    const w = await scope.connect({ provider: p.name, secret: p.secret });
    const ack = await w.register({ models: [`  ${b}  `, '', a, b, '   ', `\t${c}`, a, d] });
    expect(ack.models).toEqual([b, a, c]);
    expect(Array.isArray(ack.warnings)).toBe(true);
    expect(ack.warnings.length).toBeGreaterThan(0);
    for (const warning of ack.warnings) expect(typeof warning).toBe('string');
  });

  test('sanitization without truncation: trimmed, de-duplicated list is acked in first-seen order', async () => {
    const [a, b] = [uniqueModel('san2'), uniqueModel('san2')];
    const w = await scope.connect();
    const ack = await w.register({ models: [` ${a}`, b, a, ''] });
    expect(ack.models).toEqual([a, b]);
  });

  test('warnings are omitted from register_ack when nothing was changed', async () => {
    const w = await scope.connect();
    const ack = await w.register({ models: [uniqueModel('clean'), uniqueModel('clean')] });
    expect(Object.prototype.hasOwnProperty.call(ack, 'warnings')).toBe(false);
  });

  test('a worker with no routable models is acked with an empty list and a warning', async () => {
    const w = await scope.connect();
    const ack = await w.register({ models: ['', '  '] });
    expect(ack.models).toEqual([]);
    expect(ack.warnings?.length).toBeGreaterThan(0);
  });

  test('a worker only routes models it was acked for (never more than the sanitized list)', async () => {
    const p = await scope.provider({ max_models: 1 }, 'cap1');
    const [kept, dropped] = [uniqueModel('kept'), uniqueModel('dropped')];
    const w = await scope.connect({ provider: p.name, secret: p.secret });
    const ack = await w.register({ models: [kept, dropped] });
    expect(ack.models).toEqual([kept]);
    const res = await scope.post('/v1/chat/completions', JSON.stringify({ model: dropped, messages: [] })).done;
    expect(res.status).toBe(404);
    expect(w.requests()).toHaveLength(0);
  });

  test('an invalid frame after registration closes the socket with 1002', async () => {
    const w = await scope.worker({ models: [uniqueModel('later')] });
    w.sendRaw('{"type":"no_such_message_type"}');
    await expectProtocolError(w);
  });

  test('a binary frame closes the socket with 1002', async () => {
    const w = await scope.worker({ models: [uniqueModel('bin')] });
    w.sendRaw(Buffer.from(JSON.stringify({ type: 'pong', current_load: 0 })), true);
    await expectProtocolError(w);
  });
});
