/** The inference routes (OpenAI- and Anthropic-style): their answers carry the model-runner API's headers. */
export const INFERENCE_PATHS: ReadonlySet<string> = new Set([
  '/v1/chat/completions',
  '/v1/completions',
  '/v1/responses',
  '/v1/embeddings',
  '/v1/messages',
  '/v1/messages/count_tokens',
]);
