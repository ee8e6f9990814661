export { createResponsesCodec, responsesCodec } from './codec';
export { PREVIOUS_RESPONSE_UNSUPPORTED } from './request';
export type { CodecSources } from './shapes';
