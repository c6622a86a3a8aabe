import type { GapRange, PushOutcome, PushResult, Release } from './reorder-types.js';

// The results of a reorder buffer's push: the released items (an array) with the outcome and the
// gaps as two properties. The outcomes that release nothing are shared, frozen constants.

export const NO_GAPS: readonly GapRange[] = Object.freeze([]);
const constant = <T>(outcome: PushOutcome): PushResult<T> =>
  Object.freeze(Object.assign([] as Release<T>[], { outcome, gaps: NO_GAPS }));
export const BUFFERED = constant<never>('buffered');
export const DUPLICATE = constant<never>('duplicate');
export const STALE = constant<never>('stale');
export const REJECTED = constant<never>('rejected');

/** `out` as a push result. */
export function result<T>(out: Release<T>[], outcome: PushOutcome, gaps: readonly GapRange[]): PushResult<T> {
  // Plain stores, not Object.assign: every result array then shares one hidden class.
  const r = out as Release<T>[] & { outcome: PushOutcome; gaps: readonly GapRange[] };
  r.outcome = outcome;
  r.gaps = gaps;
  return r;
}
