import { randomFillSync } from 'node:crypto';

const POOL = 4096;
const INVALID_TRACE = '0'.repeat(32);
const INVALID_SPAN = '0'.repeat(16);

/**
 * Random trace and span ids (hex) cut from a pool of random bytes refilled once per few hundred
 * ids, instead of a random call per id. All-zero ids are invalid in W3C Trace Context: redrawn.
 */
export class SpanIds {
  private readonly pool = Buffer.allocUnsafe(POOL);
  private at = POOL;

  traceId(): string {
    const id = this.next(16);
    return id === INVALID_TRACE ? this.traceId() : id;
  }

  spanId(): string {
    const id = this.next(8);
    return id === INVALID_SPAN ? this.spanId() : id;
  }

  private next(bytes: number): string {
    if (this.at + bytes > POOL) {
      randomFillSync(this.pool);
      this.at = 0;
    }
    const id = this.pool.toString('hex', this.at, this.at + bytes);
    this.at += bytes;
    return id;
  }
}
