import fc from 'fast-check';
import { DroppedFrame, encodeMessage, parseServerMessage, parseWorkerMessage, ProtocolError } from './codec';
import { WorkerNumberBounds } from './number-bounds';
import { forwardableHeaders } from './http-headers';

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
    ['a load that is not a number', '{"type":"pong","current_load":"7"}'],
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

  describe('numbers are clamped (a worker is untrusted input)', () => {
    it('clamps token counts: huge (9e15, 1e400) to the bound, negative to 0, fractional up; wrong types are ignored', () => {
      const m = parseWorkerMessage(
        '{"type":"response_complete","request_id":"r","status_code":200,"token_counts":{"prompt_tokens":-5,"completion_tokens":2.2,"total_tokens":9e15}}',
      );
      expect(m).toMatchObject({ token_counts: { prompt_tokens: 0, completion_tokens: 3, total_tokens: WorkerNumberBounds.tokens } });
      const inf = parseWorkerMessage('{"type":"response_complete","request_id":"r","status_code":200,"token_counts":{"total_tokens":1e400}}');
      expect(inf).toMatchObject({ token_counts: { total_tokens: WorkerNumberBounds.tokens } });
      const odd = parseWorkerMessage(
        '{"type":"response_complete","request_id":"r","status_code":200,"token_counts":{"total_tokens":"NaN","prompt_tokens":{"a":1}}}',
      );
      expect(odd).toMatchObject({ token_counts: {} });
      expect(parseWorkerMessage('{"type":"response_complete","request_id":"r","status_code":200,"token_counts":"lots"}')).toMatchObject({
        token_counts: undefined,
      });
    });

    it('clamps load, capacity, priority, context length and the pong timestamp', () => {
      expect(parseWorkerMessage('{"type":"pong","current_load":-1,"timestamp_unix_ms":1e300}')).toEqual({
        type: 'pong',
        current_load: 0,
        timestamp_unix_ms: WorkerNumberBounds.epochMs,
      });
      expect(parseWorkerMessage('{"type":"pong","current_load":1e400,"timestamp_unix_ms":"soon"}')).toEqual({
        type: 'pong',
        current_load: WorkerNumberBounds.load,
        timestamp_unix_ms: undefined,
      });
      const reg = parseWorkerMessage(
        '{"type":"register","worker_name":"w","models":["a"],"max_concurrent":1e308,"current_load":0.5,"priority":9e15,"capabilities":{"a":{"context_length":1e300}}}',
      );
      expect(reg).toMatchObject({
        max_concurrent: WorkerNumberBounds.maxConcurrent,
        current_load: 1,
        priority: WorkerNumberBounds.priority,
        capabilities: { a: { context_length: WorkerNumberBounds.contextLength } },
      });
      expect(parseWorkerMessage('{"type":"register","worker_name":"w","models":["a"],"max_concurrent":-3}')).toMatchObject({ max_concurrent: 0 });
    });

    it('lowers huge lifecycle figures to their bounds, and ignores a relayed document nested too deep', () => {
      expect(parseWorkerMessage('{"type":"lifecycle_status","task_id":"t","status":"loading","eta_secs":1e400,"memory_freed_mb":1e300}')).toMatchObject({
        eta_secs: WorkerNumberBounds.etaSecs,
        memory_freed_mb: WorkerNumberBounds.megabytes,
      });
      const deep = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
      const reg = parseWorkerMessage(`{"type":"register","worker_name":"w","models":["a"],"max_concurrent":1,"runner_capabilities":${deep}}`);
      expect(reg).toMatchObject({ type: 'register', runner_capabilities: undefined });
    });

    it('bounds the error frame text', () => {
      const m = parseWorkerMessage(JSON.stringify({ type: 'error', code: 'c'.repeat(10_000), message: 'm'.repeat(100_000) }));
      expect(m).toMatchObject({ type: 'error' });
      expect((m as { code: string }).code).toHaveLength(128);
      expect((m as { message: string }).message).toHaveLength(1024);
    });

    it('property: whatever JSON value sits in a numeric field, the frame is refused or every number in it is finite and within its bound', () => {
      const absurd = fc.oneof(
        fc.double(),
        fc.integer(),
        fc.constantFrom(9e15, -9e15, 1e308, -0, 0.5, 2 ** 53 + 1),
        fc.string({ maxLength: 8 }),
        fc.constantFrom('NaN', 'Infinity', '1e400', null, true, [], {}),
        fc.jsonValue({ maxDepth: 3 }),
      );
      const raw = (v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? (v > 0 ? '1e400' : v < 0 ? '-1e400' : '0') : JSON.stringify(v));
      const frames = (v: string) => [
        `{"type":"register","worker_name":"w","models":["a"],"max_concurrent":${v},"current_load":${v},"priority":${v},"capabilities":{"a":{"context_length":${v}}}}`,
        `{"type":"models_update","models":["a"],"current_load":${v},"priority":${v}}`,
        `{"type":"pong","current_load":${v},"timestamp_unix_ms":${v}}`,
        `{"type":"response_complete","request_id":"r","status_code":200,"token_counts":{"prompt_tokens":${v},"completion_tokens":${v},"total_tokens":${v}}}`,
        `{"type":"response_complete","request_id":"r","status_code":${v}}`,
        `{"type":"response_start","request_id":"r","status_code":${v}}`,
        `{"type":"lifecycle_status","task_id":"t","status":"loading","progress":${v},"eta_secs":${v},"gpu_memory_used_mb":${v},"entries_removed":${v}}`,
      ];
      const numbersIn = (x: unknown, out: number[] = []): number[] => {
        if (typeof x === 'number') out.push(x);
        else if (x && typeof x === 'object') for (const y of Object.values(x)) numbersIn(y, out);
        return out;
      };
      fc.assert(
        fc.property(absurd, (value) => {
          for (const text of frames(raw(value))) {
            let parsed: unknown;
            try {
              parsed = parseWorkerMessage(text);
            } catch (e) {
              expect(e instanceof ProtocolError || e instanceof DroppedFrame).toBe(true);
              continue;
            }
            for (const n of numbersIn(parsed)) {
              expect(Number.isFinite(n)).toBe(true);
              expect(n).toBeGreaterThanOrEqual(0);
              expect(n).toBeLessThanOrEqual(WorkerNumberBounds.epochMs);
            }
            const tc = (parsed as { token_counts?: Record<string, number> }).token_counts;
            for (const n of Object.values(tc ?? {})) expect(Number.isInteger(n) && n <= WorkerNumberBounds.tokens).toBe(true);
          }
        }),
        { numRuns: 300 },
      );
    });
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

  describe('pong cache_stats (negotiated)', () => {
    it('keeps each ratio clamped to 0–1 and drops what is not a number', () => {
      expect(parseWorkerMessage('{"type":"pong","current_load":1,"cache_stats":{"kv_cache_usage_ratio":0.42,"prefix_cache_hit_ratio":1.7}}')).toEqual({
        type: 'pong',
        current_load: 1,
        cache_stats: { kv_cache_usage_ratio: 0.42, prefix_cache_hit_ratio: 1 },
      });
      expect(parseWorkerMessage('{"type":"pong","current_load":1,"cache_stats":{"kv_cache_usage_ratio":-3,"prefix_cache_hit_ratio":"high"}}')).toEqual({
        type: 'pong',
        current_load: 1,
        cache_stats: { kv_cache_usage_ratio: 0 },
      });
    });

    it('ignores a malformed cache_stats instead of closing the link', () => {
      for (const bad of ['"x"', '[]', 'null', '{}', '{"kv_cache_usage_ratio":null}']) {
        const m = parseWorkerMessage(`{"type":"pong","current_load":0,"cache_stats":${bad}}`);
        expect(m).toMatchObject({ type: 'pong', current_load: 0 });
        expect((m as { cache_stats?: unknown }).cache_stats).toBeUndefined();
      }
    });
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
      const load = {
        type: 'model_load',
        task_id: 't1',
        model_id: 'm',
        quantization: 'q4',
        max_context_length: 8192,
        gpu_memory_budget_mb: 4000,
        evict_model: 'old',
        verified_op_token: 'tok',
      } as const;
      const unload = { type: 'model_unload', task_id: 't2', model_id: 'm' } as const;
      const flush = { type: 'cache_flush', task_id: 't3', scope: 'tenant', tenant_id: 'acme' } as const;
      expect(parseServerMessage(encodeMessage(load))).toEqual(load);
      expect(parseServerMessage(encodeMessage(unload))).toMatchObject(unload);
      expect(parseServerMessage(encodeMessage(flush))).toMatchObject(flush);
      expect(() => parseServerMessage('{"type":"cache_flush","task_id":"t","scope":"everything"}')).toThrow(ProtocolError);
    });
  });
});

describe('issue 22: gpu_time_ms and runner_capabilities frames', () => {
  const complete = (extra: string) => parseWorkerMessage(`{"type":"response_complete","request_id":"r","status_code":200${extra}}`);

  it('reads gpu_time_ms as a hint: absent stays absent, numbers clamped and rounded, anything else left out', () => {
    expect(complete('')).not.toHaveProperty('gpu_time_ms');
    expect(complete(',"gpu_time_ms":450')).toMatchObject({ gpu_time_ms: 450 });
    expect(complete(',"gpu_time_ms":1.2')).toMatchObject({ gpu_time_ms: 2 });
    expect(complete(',"gpu_time_ms":-5')).toMatchObject({ gpu_time_ms: 0 });
    expect(complete(',"gpu_time_ms":1e300')).toMatchObject({ gpu_time_ms: 7 * 24 * 3600_000 });
    expect(complete(',"gpu_time_ms":"fast"')).not.toHaveProperty('gpu_time_ms');
    expect(complete(',"gpu_time_ms":null')).not.toHaveProperty('gpu_time_ms');
  });

  it('parses runner_capabilities: a JSON object, else a protocol error', () => {
    expect(parseWorkerMessage('{"type":"runner_capabilities","runner_capabilities":{"resources":{"gpuMemoryFreeMB":1}}}')).toEqual({
      type: 'runner_capabilities',
      runner_capabilities: { resources: { gpuMemoryFreeMB: 1 } },
    });
    expect(() => parseWorkerMessage('{"type":"runner_capabilities"}')).toThrow(ProtocolError);
    expect(() => parseWorkerMessage('{"type":"runner_capabilities","runner_capabilities":[1]}')).toThrow(ProtocolError);
    const deep = '{"a":'.repeat(40) + '1' + '}'.repeat(40);
    expect(() => parseWorkerMessage(`{"type":"runner_capabilities","runner_capabilities":${deep}}`)).toThrow(ProtocolError);
  });
});

describe('header maps of worker frames', () => {
  it('are checked in place: a "__proto__" header is a plain entry that changes no prototype, and is not forwarded', () => {
    const msg = parseWorkerMessage('{"type":"response_complete","request_id":"r","status_code":200,"headers":{"__proto__":"x","content-type":"text/plain"}}');
    if (msg.type !== 'response_complete') throw new Error(`unexpected ${msg.type}`);
    expect(Object.getPrototypeOf(msg.headers)).toBe(Object.prototype);
    expect(Object.keys(msg.headers!)).toEqual(['__proto__', 'content-type']);
    expect(forwardableHeaders(msg.headers!)).toEqual({ 'content-type': 'text/plain' });
    expect(() => parseWorkerMessage('{"type":"response_complete","request_id":"r","status_code":200,"headers":{"a":1}}')).toThrow(ProtocolError);
  });
});
