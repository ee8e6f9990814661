import { Injectable } from '@nestjs/common';
import { ProviderQueue, Queueable } from './provider-queue';

/** One bounded queue per provider, created on first use. */
@Injectable()
export class RequestQueues<T extends Queueable = Queueable> {
  private readonly queues = new Map<string, ProviderQueue<T>>();

  of(provider: string): ProviderQueue<T> {
    let q = this.queues.get(provider);
    if (!q) this.queues.set(provider, (q = new ProviderQueue<T>()));
    return q;
  }

  depth(provider: string): number {
    return this.queues.get(provider)?.length ?? 0;
  }

  totalDepth(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  /** Removes a provider's queue, returning the requests that were waiting. */
  discard(provider: string): T[] {
    const q = this.queues.get(provider);
    this.queues.delete(provider);
    return q ? q.clear() : [];
  }
}
