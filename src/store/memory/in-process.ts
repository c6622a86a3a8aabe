// The in-process fast path of a store that decides limiter takes in this process (the memory
// store): internal, not part of the documented Store contract. A third-party store implements
// `limiterTake`; only a store that holds the limiter state in this very process can answer a
// take synchronously, as the limiter's decision, with no command, reply or promise per take.
//
// It is found under a symbol that no public module exports, so no store outside this package
// can offer it by accident (a method name could be written by anyone), and a wrapper such as
// wrapStore, which reaches members by name, does not pass it on: a wrapped store is seen as any
// store of the contract, taken through `limiterTake`.
import type { Decision } from '../../windows/limits/decision.js';
import type { LimitCall } from '../limiter.js';
import type { Store } from '../store.js';

/** The key a store's in-process limiter is found under. */
export const IN_PROCESS_LIMITER: unique symbol = Symbol('onceflow.inProcessLimiter');

/**
 * Decides limiter takes synchronously, as the limiter's decision. The arguments are a
 * `LimiterTakeCommand`'s fields; `now` undefined means the store's clock. The decision must list
 * whole `LimitVerdict`s. The limits are the limiter's own, checked when it was made: unlike
 * `limiterTake`, this path does not check their specs again.
 */
export interface InProcessLimiter {
  decide(limits: readonly LimitCall[], cost: number, now: number | undefined): Decision;
  /**
   * `decide` for a limiter of one limit: the call itself, no list per take (a limiter keeps one
   * call per subject instead of a list, one object fewer to reach on every take).
   */
  decideOne(call: LimitCall, cost: number, now: number | undefined): Decision;
}

/** A store with an in-process limiter. */
export interface InProcessStore extends Store {
  readonly [IN_PROCESS_LIMITER]: InProcessLimiter;
}

/**
 * The in-process limiter of `store`, or `undefined` for a store that is reached through
 * `limiterTake` only. Read once, when a limiter is made: no take pays for the lookup.
 */
export function inProcessLimiterOf(store: Store): InProcessLimiter | undefined {
  const found = (store as Partial<InProcessStore>)[IN_PROCESS_LIMITER];
  return typeof found?.decide === 'function' && typeof found.decideOne === 'function' ? found : undefined;
}
