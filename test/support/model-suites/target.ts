// What a model suite needs of a store, and how a binding says what its store lacks. A suite in
// this folder is written once and bound per store by a small test file (memory, Redis standalone
// and Cluster, PostgreSQL); a case a store cannot run is skipped with its written reason, so a
// skip is visible in the report and says why.
import { it } from 'vitest';
import type { Store } from '../../../src/store/store.js';

export interface StoreTarget<Case extends string = string> {
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
  /** Cases this store cannot run, each with the reason. */
  readonly skip?: Partial<Record<Case, string>>;
}

/** A property's run count for `target`. */
export function runsFor(target: StoreTarget, runs: number): number {
  return Math.max(1, Math.round(runs * (target.runScale ?? 1)));
}

/** Declares case `id` of a suite, or skips it with the binding's reason. */
export function storeCase<Case extends string>(
  target: StoreTarget<Case>,
  id: Case,
  title: string,
  fn: () => Promise<void>,
  timeout?: number,
): void {
  const reason = target.skip?.[id];
  if (reason !== undefined) it.skip(`${title} (skipped on ${target.label}: ${reason})`, fn);
  else it(title, fn, timeout);
}
