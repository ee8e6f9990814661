/** The label value that stands for every value past the budget. */
export const OVERFLOW_LABEL = '(other)';

/**
 * Caps how many distinct values one label may take. Model names and tenant ids come from
 * clients; without a cap, random values would create a new time series each, and /metrics would
 * grow without bound. The first `max` values seen keep their own series.
 */
export class LabelBudget {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number) {}

  label(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return OVERFLOW_LABEL;
    this.seen.add(value);
    return value;
  }
}
