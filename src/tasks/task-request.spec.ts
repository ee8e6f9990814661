import { GatewayError } from '../common/gateway-error';
import { parseTaskRequest, TaskRequest } from './task-request';

const parse = (body: unknown) => parseTaskRequest(JSON.stringify(body));

describe('parseTaskRequest', () => {
  it('keeps the gateway fields for itself and forwards the rest with stream: true', () => {
    const req = parse({
      task_id: 'job:1',
      session_id: 's.1',
      model: 'm',
      messages: [{ role: 'user', content: 'secret prompt' }],
      max_tokens: 32,
      ctx: 4096,
      pool_id: ' gpu-a ',
      priority: 'LOW',
      output_mode: 'edits',
      budget: { tokens: 100, time_secs: 2.5 },
      seed: 7,
      temperature: 0.1,
      stream: false,
    }) as TaskRequest;
    expect(req).toMatchObject({
      taskId: 'job:1',
      sessionId: 's.1',
      model: 'm',
      endpoint: '/v1/chat/completions',
      maxTokens: 32,
      ctx: 4096,
      poolId: 'gpu-a',
      priority: 'low',
      outputMode: 'edits',
      budget: { tokens: 100, timeSecs: 2.5 },
      seed: 7,
    });
    expect(req.workerJson).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'secret prompt' }],
      max_tokens: 32,
      seed: 7,
      temperature: 0.1,
      stream: true,
    });
    // The artifact's copy: everything the client sent but the prompt.
    expect(req.params).toMatchObject({ task_id: 'job:1', messages: '[redacted]', max_tokens: 32, budget: { tokens: 100, time_secs: 2.5 }, temperature: 0.1 });
    expect(JSON.stringify(req.params)).not.toContain('secret prompt');
  });

  it("takes the job artifact's lineage as 'parent' (one id or a list) as well as 'parents', and forwards neither", () => {
    const [a, b] = ['a', 'b'].map((x) => x.repeat(64));
    const one = parse({ model: 'm', prompt: 'p', max_tokens: 1, parent: a }) as TaskRequest;
    expect(one.parents).toEqual([a]);
    expect(one.workerJson).not.toHaveProperty('parent');
    expect((parse({ model: 'm', prompt: 'p', max_tokens: 1, parents: [a], parent: [a, b] }) as TaskRequest).parents).toEqual([a, b]);
    const refused = parse({ model: 'm', prompt: 'p', max_tokens: 1, parent: 'nope' }) as GatewayError;
    expect(refused).toBeInstanceOf(GatewayError);
    expect(refused.details).toMatchObject({ param: 'parent', fields: { check: 'params' } });
  });

  it('a prompt makes a completion; unknown output modes are dropped', () => {
    const req = parse({ model: 'm', prompt: ['a', 'b'], max_tokens: 1, output_mode: 'yaml', system: 'x' }) as TaskRequest;
    expect(req.endpoint).toBe('/v1/completions');
    expect(req.outputMode).toBeUndefined();
    expect(req.params).toMatchObject({ prompt: '[redacted]', system: '[redacted]', output_mode: 'yaml' });
  });

  it('refuses with invalid_params naming the field', () => {
    const refused = parse({ model: 'm', prompt: 'p', max_tokens: 1, budget: { tokens: 2, time_secs: 'soon' } }) as GatewayError;
    expect(refused).toBeInstanceOf(GatewayError);
    expect(refused).toMatchObject({ code: 'invalid_params', details: { param: 'budget.time_secs', fields: { check: 'params' } } });
    expect((parseTaskRequest(undefined) as GatewayError).details.param).toBe('body');
  });
});
