import { DroppedFrame, encodeMessage, parseServerMessage, parseWorkerMessage, ProtocolError } from './codec';

describe('worker protocol codec', () => {
  it('parses a register frame and ignores unknown fields', () => {
    const m = parseWorkerMessage('{"type":"register","worker_name":"w","models":["a"],"max_concurrent":0,"extra":1}');
    expect(m).toMatchObject({ type: 'register', worker_name: 'w', models: ['a'], max_concurrent: 0 });
  });

  it('accepts null for optional fields', () => {
    expect(parseWorkerMessage('{"type":"response_complete","request_id":"r","status_code":200,"headers":null,"body":null,"token_counts":null}')).toMatchObject({
      type: 'response_complete',
      headers: undefined,
      body: undefined,
    });
  });

  it.each([
    ['invalid JSON', '{'],
    ['a non-object', '[]'],
    ['an unknown type', '{"type":"hello"}'],
    ['a missing required field', '{"type":"response_chunk","request_id":"r"}'],
    ['a negative load', '{"type":"pong","current_load":-1}'],
    ['an out-of-range status', '{"type":"response_complete","request_id":"r","status_code":42}'],
  ])('rejects %s', (_label, text) => {
    expect(() => parseWorkerMessage(text)).toThrow(ProtocolError);
  });

  it('leaves current_load unset when a models_update omits it (no claim about load)', () => {
    expect(parseWorkerMessage('{"type":"models_update","models":["a"]}')).toEqual({
      type: 'models_update',
      models: ['a'],
      current_load: undefined,
      capabilities: undefined,
      endpoints: undefined,
      priority: undefined,
    });
  });

  it('reads the optional endpoints and priority hints, ignoring malformed ones instead of failing the frame', () => {
    const ok = parseWorkerMessage(
      '{"type":"register","worker_name":"w","models":["a"],"max_concurrent":1,"endpoints":["/v1/chat/completions",7,"no-slash"],"priority":10}',
    );
    expect(ok).toMatchObject({ endpoints: ['/v1/chat/completions'], priority: 10 });
    const bad = parseWorkerMessage('{"type":"models_update","models":["a"],"endpoints":"all","priority":-3}');
    expect(bad).toMatchObject({ endpoints: undefined, priority: undefined });
  });

  it('reads the optional runner of a register leniently: malformed or oversized values are dropped, never a protocol error', () => {
    const base = '{"type":"register","worker_name":"w","models":["a"],"max_concurrent":1';
    expect(parseWorkerMessage(`${base},"runner":{"type":"vllm","version":"0.11.0"}}`)).toMatchObject({
      runner: { type: 'vllm', version: '0.11.0' },
    });
    const runnerOf = (text: string) => (parseWorkerMessage(text) as { runner?: object }).runner;
    expect(runnerOf(`${base},"runner":{"type":"ollama","version":7}}`)).toEqual({ type: 'ollama' });
    const long = 'x'.repeat(65);
    expect(runnerOf(`${base},"runner":{"type":"llama-server","version":"${long}"}}`)).toEqual({ type: 'llama-server' });
    for (const bad of ['"llama-server"', '[]', 'null', '{"version":"1"}', '{"type":""}', `{"type":"${long}"}`, '{"type":5}']) {
      expect(parseWorkerMessage(`${base},"runner":${bad}}`)).toMatchObject({ type: 'register', runner: undefined });
    }
    expect(parseWorkerMessage(`${base}}`)).toMatchObject({ runner: undefined });
  });

  it('omits absent optional fields when encoding', () => {
    const text = encodeMessage({ type: 'register_ack', worker_id: 'w-1', models: ['a'], warnings: undefined, protocol_version: undefined });
    expect(text).toBe('{"type":"register_ack","worker_id":"w-1","models":["a"]}');
  });

  it('round-trips server frames for the worker daemon', () => {
    const frame = { type: 'cancel', request_id: 'r-1', reason: 'timeout' } as const;
    expect(parseServerMessage(encodeMessage(frame))).toEqual(frame);
    expect(() => parseServerMessage('{"type":"cancel","request_id":"r","reason":"bored"}')).toThrow(ProtocolError);
  });

  describe('model lifecycle frames (negotiated)', () => {
    it('reads a lifecycle_status with its figures and ignores unknown fields', () => {
      const m = parseWorkerMessage(
        '{"type":"lifecycle_status","task_id":"load-1","status":"loading","progress":0.5,"eta_secs":12,"gpu_memory_used_mb":4096,"extra":true}',
      );
      expect(m).toEqual({ type: 'lifecycle_status', task_id: 'load-1', status: 'loading', progress: 0.5, eta_secs: 12, gpu_memory_used_mb: 4096 });
    });

    it.each([
      ['progress above 1', '{"type":"lifecycle_status","task_id":"t","status":"loading","progress":7}'],
      ['an unknown status', '{"type":"lifecycle_status","task_id":"t","status":"exploded"}'],
      ['a negative figure', '{"type":"lifecycle_status","task_id":"t","status":"completed","memory_freed_mb":-3}'],
      ['a missing task id', '{"type":"lifecycle_status","status":"completed"}'],
      ['a non-string error', '{"type":"lifecycle_status","task_id":"t","status":"failed","error":{"x":1}}'],
    ])('drops a report with %s instead of failing the session', (_label, text) => {
      expect(() => parseWorkerMessage(text)).toThrow(DroppedFrame);
      expect(() => parseWorkerMessage(text)).not.toThrow(ProtocolError);
    });

    it('round-trips the server commands through the daemon parser', () => {
      const load = { type: 'model_load', task_id: 't1', model_id: 'm', quantization: 'q4', max_context_length: 8192, gpu_memory_budget_mb: 4000, evict_model: 'old', verified_op_token: 'tok' } as const;
      const unload = { type: 'model_unload', task_id: 't2', model_id: 'm' } as const;
      const flush = { type: 'cache_flush', task_id: 't3', scope: 'tenant', tenant_id: 'acme' } as const;
      expect(parseServerMessage(encodeMessage(load))).toEqual(load);
      expect(parseServerMessage(encodeMessage(unload))).toMatchObject(unload);
      expect(parseServerMessage(encodeMessage(flush))).toMatchObject(flush);
      expect(() => parseServerMessage('{"type":"cache_flush","task_id":"t","scope":"everything"}')).toThrow(ProtocolError);
    });
  });
});
