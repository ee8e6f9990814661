import { UsageRecord } from './usage-record';

/**
 * Persistence port for usage records. `record` is called once per finished request, on the request
 * path: it must return at once and never throw; writing happens later, in batches (write-behind).
 */
export abstract class UsageRecorder {
  abstract record(entry: UsageRecord): void;
}

/** Records nothing: for a dispatcher built without a usage module (unit tests). */
export const NO_USAGE_RECORDS: UsageRecorder = { record: () => undefined };
