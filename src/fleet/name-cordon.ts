/**
 * A worker name held out of rotation by an operator (`POST /admin/workers/:id/drain` until
 * `…/undrain`): connections with that name in that provider are refused (close 1013).
 */
export interface NameCordon {
  provider: string;
  name: string;
  since: number;
  reason: string;
  /** Ids of the connections that were drained for it: undrain accepts any of them, also once gone. */
  workerIds: ReadonlySet<string>;
}
