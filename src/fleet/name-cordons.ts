import { NameCordon } from './name-cordon';

/**
 * Cordoned worker names, by provider then name. In memory only, like the worker index: a gateway
 * restart lifts them (docs/control-plane.md). Bounded by what operators drain.
 */
export class NameCordons {
  private readonly cordons = new Map<string, Map<string, NameCordon & { workerIds: Set<string> }>>();
  private readonly cordonByWorkerId = new Map<string, NameCordon>();

  /** Cordons `name` within `provider` (or adds a drained connection id to its cordon). */
  cordon(provider: string, name: string, workerId: string, reason: string, now: number): NameCordon {
    let byName = this.cordons.get(provider);
    if (!byName) this.cordons.set(provider, (byName = new Map()));
    let cordon = byName.get(name);
    if (!cordon) byName.set(name, (cordon = { provider, name, since: now, reason, workerIds: new Set() }));
    cordon.workerIds.add(workerId);
    this.cordonByWorkerId.set(workerId, cordon);
    return cordon;
  }

  /** Lifts a name's cordon; false when it was not cordoned. */
  uncordon(provider: string, name: string): boolean {
    const byName = this.cordons.get(provider);
    const cordon = byName?.get(name);
    if (!byName || !cordon) return false;
    byName.delete(name);
    if (byName.size === 0) this.cordons.delete(provider);
    for (const id of cordon.workerIds) this.cordonByWorkerId.delete(id);
    return true;
  }

  of(provider: string, name: string): NameCordon | undefined {
    return this.cordons.get(provider)?.get(name);
  }

  /** The cordon a connection id was drained into (found also after that connection is gone). */
  ofWorkerId(workerId: string): NameCordon | undefined {
    return this.cordonByWorkerId.get(workerId);
  }

  /** Every cordoned name, of one provider or of all. */
  list(provider?: string): NameCordon[] {
    const maps = provider === undefined ? [...this.cordons.values()] : [this.cordons.get(provider) ?? new Map<string, NameCordon>()];
    return maps.flatMap((m) => [...m.values()]);
  }

  /** Drops a deleted provider's name cordons. */
  clear(provider: string): void {
    for (const c of this.list(provider)) this.uncordon(provider, c.name);
  }
}
