import { endpointPresent } from './endpoints';
import { label } from './json';
import { isLlamaServerProps, llamaServerCapabilities } from './llama-server';
import { ollamaCapabilities } from './ollama';
import { looksLikeVllm, vllmContextLengths } from './vllm';

describe('probe parsers', () => {
  describe('llama-server /props', () => {
    it('reads the per-slot n_ctx, vision and the template tool flags', () => {
      const props = {
        default_generation_settings: { n_ctx: 4096 },
        total_slots: 4,
        modalities: { vision: true },
        chat_template_caps: { supports_tools: true, supports_tool_calls: true },
      };
      expect(isLlamaServerProps(props)).toBe(true);
      expect(llamaServerCapabilities(props)).toEqual({ context_length: 4096, vision: true, tools: true });
    });

    it('leaves out what is missing or malformed instead of guessing', () => {
      expect(llamaServerCapabilities({ default_generation_settings: { n_ctx: '4096' }, modalities: 'vision', chat_template_caps: {} })).toEqual({});
      expect(llamaServerCapabilities({ default_generation_settings: { n_ctx: -1 } })).toEqual({});
      expect(llamaServerCapabilities({ default_generation_settings: { n_ctx: 4096.5 } })).toEqual({});
      expect(llamaServerCapabilities({ chat_template_caps: { supports_tools: true } })).toEqual({ tools: true });
      expect(llamaServerCapabilities({ chat_template_caps: { supports_tools: false, supports_tool_calls: true } })).toEqual({ tools: false });
      expect(isLlamaServerProps({ status: 'ok' })).toBe(false);
    });
  });

  describe('Ollama /api/show', () => {
    it('finds the context length under the architecture named in model_info', () => {
      expect(ollamaCapabilities({ capabilities: ['completion'], model_info: { 'general.architecture': 'gemma3', 'gemma3.context_length': 131072 } })).toEqual({
        vision: false,
        tools: false,
        context_length: 131072,
      });
    });

    it('accepts a single *.context_length key when the architecture key does not match, and ignores several', () => {
      expect(ollamaCapabilities({ model_info: { 'general.architecture': 'qwen2', 'qwen2moe.context_length': 32768 } })).toEqual({ context_length: 32768 });
      expect(ollamaCapabilities({ model_info: { 'a.context_length': 1, 'b.context_length': 2 } })).toEqual({});
    });

    it('leaves vision and tools unknown for an Ollama too old to list capabilities', () => {
      expect(ollamaCapabilities({ model_info: { 'general.architecture': 'llama', 'llama.context_length': 8192 } })).toEqual({ context_length: 8192 });
      expect(ollamaCapabilities({ capabilities: 'vision' })).toEqual({});
    });
  });

  describe('vLLM /v1/models', () => {
    it('maps ids to max_model_len and recognises vLLM by its model cards', () => {
      const doc = { data: [{ id: 'a', owned_by: 'vllm', max_model_len: 8192 }, { id: 'b', max_model_len: null }, 'junk', { max_model_len: 5 }] };
      expect(looksLikeVllm(doc)).toBe(true);
      expect([...vllmContextLengths(doc)]).toEqual([['a', 8192]]);
      expect(looksLikeVllm({ data: [{ id: 'x', owned_by: 'llamacpp' }] })).toBe(false);
      expect(looksLikeVllm({ data: 'nope' })).toBe(false);
    });
  });

  it('classifies endpoint probe answers', () => {
    expect([400, 401, 403, 422, 429, 500, 503].map((s) => endpointPresent(s, '{}'))).toEqual(Array(7).fill(true));
    expect([404, 405, 501].map((s) => endpointPresent(s, '{"detail":"Not Found"}'))).toEqual([false, false, false]);
    expect(endpointPresent(404, `{"error":"model '' not found"}`)).toBe(true);
    expect(endpointPresent(404, '404 page not found')).toBe(false);
  });

  it('keeps runner versions printable and at most 64 characters', () => {
    expect(label('b6500-1a2b\n\u0000')).toBe('b6500-1a2b');
    expect(label('v'.repeat(100))).toHaveLength(64);
    expect(label(42)).toBeUndefined();
    expect(label('   ')).toBeUndefined();
  });
});
