import type { Decision } from '../windows/limits/decision.js';
import type { LimitSpec } from '../windows/limits/types.js';

/** What a limiter does when its store fails or does not answer in time. Never a silent fail-open. */
export type DegradedPolicy =
  /** Rethrow the store's error (a `StoreError`). */
  | 'throw'
  /** Refuse (`reason: 'degraded-deny'`). */
  | 'deny'
  /** Admit without counting (`reason: 'degraded-allow'`): an explicit fail-open. */
  | 'allow'
  /**
   * Decide with a limiter in this process holding `share` of each limit (e.g. 1/4 on each of 4
   * nodes: the cluster as a whole stays near the limit). `reason: 'degraded-local'`.
   */
  | { mode: 'local'; share: number };

/** A limiter: `take` decides one request. */
export interface Limiter {
  /**
   * Decides a request of `cost` (default 1) for `key`, or for several subjects
   * (`{ user: 'u1', ip: '10.0.0.1' }`, matched by each limit's `by`; a limit without `by` uses
   * the subject `key`). All limits admit it and are charged, or none is charged.
   */
  take(key: string | Readonly<Record<string, string>>, options?: { cost?: number }): Promise<Decision>;
  /**
   * Forgets `key`'s usage in every limit (its store state, its block, its degraded-local
   * counters), after the takes called before it: its next take starts afresh. What
   * rate-limiter-flexible calls `delete`, express-rate-limit `resetKey`. Needs a store with
   * `limiterDelete` (the memory and Redis stores have it).
   */
  reset(key: string | Readonly<Record<string, string>>): Promise<void>;
  /** The validated limits, in order. */
  readonly limits: readonly LimitSpec[];
  /**
   * Forgets what this process keeps of the limiter's state: its block cache and the counters of
   * its degraded-local limiter (after a reset of the limiter's keys).
   */
  clearBlocks(): void;
}
