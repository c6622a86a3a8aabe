// What a model suite needs of a store. A suite in this folder is written once and bound per store
// by a small test file (memory, Redis standalone and Cluster, PostgreSQL); where a store promises
// less (no call order for concurrent calls), the binding says so and the suite checks what it
// does promise instead.
import type { Store } from '../../../src/store/store.js';

export interface StoreTarget {
  /** Names the store in test titles, e.g. `Redis (cluster)`. */
  readonly label: string;
  /**
   * The store under test; with `keep`, one that keeps only the newest `keep` journal entries
   * (per owner on Redis and PostgreSQL: the suites that use it book for one owner). A new handle
   * or the same one each call: every handle sees the same data.
   */
  store(keep?: number): Store;
  /** Each property's run count is multiplied by this (under 1 where a run is slower: the Cluster). */
  readonly runScale?: number;
  /**
   * Whether concurrent calls take effect in call order (default true: one process's calls are
   * batched or queued in order). `false`: they race (PostgreSQL: separate pool connections).
   */
  readonly inCallOrder?: boolean;
}

/** A property's run count for `target`. */
export function runsFor(target: StoreTarget, runs: number): number {
  return Math.max(1, Math.round(runs * (target.runScale ?? 1)));
}
