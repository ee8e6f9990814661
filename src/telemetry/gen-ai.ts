/** OpenTelemetry GenAI semantic-convention names (https://opentelemetry.io/docs/specs/semconv/gen-ai/) and Switchboard's own. */
export const ATTR = {
  operation: 'gen_ai.operation.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  maxTokens: 'gen_ai.request.max_tokens',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  inputMessages: 'gen_ai.input.messages',
  errorType: 'error.type',
  status: 'http.response.status_code',
  path: 'url.path',
  stream: 'switchboard.stream',
  tenant: 'switchboard.tenant',
  keyId: 'switchboard.key_id',
  pool: 'switchboard.pool',
  workerId: 'switchboard.worker.id',
  workerName: 'switchboard.worker.name',
  queuePosition: 'switchboard.queue.position',
  queueWaitMs: 'switchboard.queue.wait_ms',
  requeues: 'switchboard.requeues',
  ttfbMs: 'switchboard.ttfb_ms',
  correlationId: 'switchboard.correlation_id',
  requestId: 'switchboard.request_id',
  attempt: 'switchboard.attempt',
} as const;

/** `gen_ai.operation.name` of an endpoint. */
export function operationOf(endpointPath: string): string {
  switch (endpointPath) {
    case '/v1/chat/completions':
    case '/v1/messages':
    case '/v1/responses':
      return 'chat';
    case '/v1/completions':
      return 'text_completion';
    case '/v1/embeddings':
      return 'embeddings';
    default:
      return endpointPath.replace(/^\/v1\//, '');
  }
}
