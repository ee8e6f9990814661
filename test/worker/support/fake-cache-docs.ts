/**
 * The cache documents llama-server and vLLM serve, in their real formats (sources in
 * docs/worker.md, "Cache telemetry"): Prometheus text exposition with HELP/TYPE lines, labels,
 * histograms and `_created` series around the figures the daemon reads, and llama-server's
 * `GET /slots` array.
 */

/** llama-server `GET /metrics` (started with `--metrics`). `ratio` undefined: a build without `kv_cache_usage_ratio`. */
export function llamaServerMetrics(figures: { ratio?: number; kvTokens: number }): string {
  return [
    '# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.',
    '# TYPE llamacpp:prompt_tokens_total counter',
    'llamacpp:prompt_tokens_total 18432',
    '# HELP llamacpp:prompt_seconds_total Prompt process time',
    '# TYPE llamacpp:prompt_seconds_total counter',
    'llamacpp:prompt_seconds_total 3.214',
    '# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.',
    '# TYPE llamacpp:tokens_predicted_total counter',
    'llamacpp:tokens_predicted_total 2211',
    '# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s.',
    '# TYPE llamacpp:prompt_tokens_seconds gauge',
    'llamacpp:prompt_tokens_seconds 5734.6',
    ...(figures.ratio === undefined
      ? []
      : [
          '# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.',
          '# TYPE llamacpp:kv_cache_usage_ratio gauge',
          `llamacpp:kv_cache_usage_ratio ${figures.ratio}`,
        ]),
    '# HELP llamacpp:kv_cache_tokens KV-cache tokens.',
    '# TYPE llamacpp:kv_cache_tokens gauge',
    `llamacpp:kv_cache_tokens ${figures.kvTokens}`,
    '# HELP llamacpp:requests_processing Number of requests processing.',
    '# TYPE llamacpp:requests_processing gauge',
    'llamacpp:requests_processing 1',
    '# HELP llamacpp:requests_deferred Number of requests deferred.',
    '# TYPE llamacpp:requests_deferred gauge',
    'llamacpp:requests_deferred 0',
    '',
  ].join('\n');
}

/** llama-server `GET /slots`: one object per slot; `prompt` = [n_prompt_tokens, n_prompt_tokens_cache] of builds that report them. */
export function llamaServerSlots(slots: Array<{ nCtx: number; processing: boolean; prompt?: [number, number] }>): unknown[] {
  return slots.map((s, id) => ({
    id,
    id_task: s.processing ? 1200 + id : -1,
    n_ctx: s.nCtx,
    speculative: false,
    is_processing: s.processing,
    ...(s.prompt ? { n_prompt_tokens: s.prompt[0], n_prompt_tokens_processed: s.prompt[0] - s.prompt[1], n_prompt_tokens_cache: s.prompt[1] } : {}),
    params: {
      n_predict: -1,
      seed: 4294967295,
      temperature: 0.8,
      top_k: 40,
      top_p: 0.95,
      stop: [],
      max_tokens: -1,
      samplers: ['top_k', 'top_p', 'temperature'],
    },
    next_token: { has_next_token: s.processing, has_new_line: false, n_remain: -1, n_decoded: s.processing ? 37 : 0, stopping_word: '' },
  }));
}

const MODEL = 'model_name="meta-llama/Llama-3.1-8B-Instruct"';

/** vLLM V1 `GET /metrics` (one engine), with the prefix-cache counters in tokens. */
export function vllmMetrics(figures: { kv: number; hits: number; queries: number; v0?: boolean }): string {
  const kvName = figures.v0 ? 'vllm:gpu_cache_usage_perc' : 'vllm:kv_cache_usage_perc';
  return [
    '# HELP python_gc_objects_collected_total Objects collected during gc',
    '# TYPE python_gc_objects_collected_total counter',
    'python_gc_objects_collected_total{generation="0"} 12893.0',
    '# HELP vllm:num_requests_running Number of requests in model execution batches.',
    '# TYPE vllm:num_requests_running gauge',
    `vllm:num_requests_running{engine="0",${MODEL}} 3.0`,
    '# HELP vllm:num_requests_waiting Number of requests waiting to be processed.',
    '# TYPE vllm:num_requests_waiting gauge',
    `vllm:num_requests_waiting{engine="0",${MODEL}} 0.0`,
    `# HELP ${kvName} KV-cache usage. 1 means 100 percent usage.`,
    `# TYPE ${kvName} gauge`,
    `${kvName}{engine="0",${MODEL}} ${figures.kv}`,
    ...(figures.v0
      ? [
          '# HELP vllm:gpu_prefix_cache_hit_rate GPU prefix cache block hit rate.',
          '# TYPE vllm:gpu_prefix_cache_hit_rate gauge',
          `vllm:gpu_prefix_cache_hit_rate{${MODEL}} ${figures.hits / Math.max(1, figures.queries)}`,
        ]
      : [
          '# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.',
          '# TYPE vllm:prefix_cache_queries_total counter',
          `vllm:prefix_cache_queries_total{engine="0",${MODEL}} ${figures.queries.toFixed(1)}`,
          `vllm:prefix_cache_queries_created{engine="0",${MODEL}} 1.7302e+09`,
          '# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.',
          '# TYPE vllm:prefix_cache_hits_total counter',
          `vllm:prefix_cache_hits_total{engine="0",${MODEL}} ${figures.hits.toFixed(1)}`,
          `vllm:prefix_cache_hits_created{engine="0",${MODEL}} 1.7302e+09`,
        ]),
    '# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.',
    '# TYPE vllm:time_to_first_token_seconds histogram',
    `vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",${MODEL}} 0.0`,
    `vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",${MODEL}} 41.0`,
    `vllm:time_to_first_token_seconds_count{engine="0",${MODEL}} 41.0`,
    `vllm:time_to_first_token_seconds_sum{engine="0",${MODEL}} 3.52`,
    '',
  ].join('\n');
}
