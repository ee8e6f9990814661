/** A model some worker of a pool is loading, as `/v1/capabilities` lists it under `models.loading`. */
export interface LoadingModel {
  id: string;
  /** 0–1, the mean over the pool's workers loading it. */
  progress: number;
  /** Seconds, when every worker loading it said. */
  eta?: number;
}

/** The models being loaded right now (implemented by the lifecycle service). */
export abstract class LoadingModels {
  abstract loadingIn(pool: string): LoadingModel[];
  /** Called whenever a load starts, progresses or ends. */
  abstract onChange(listener: () => void): void;
}
