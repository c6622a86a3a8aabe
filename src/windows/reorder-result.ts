import type { GapRange, PushOutcome, PushResult, Release } from './reorder-types.js';

// The results of a reorder buffer's push: the released items (an array) with the outcome and the
// gaps as two properties. The outcomes that release nothing are shared, frozen constants.

export const NO_GAPS: readonly GapRange[] = Object.freeze([]);
// Each typed as the member of the PushResult union its outcome selects (empty, no gaps).
const constant = <O extends PushOutcome>(outcome: O) =>
  Object.freeze(Object.assign([] as Release<never>[], { outcome, gaps: NO_GAPS })) as unknown as Extract<
    PushResult<never>,
    { readonly outcome: O }
  >;
export const BUFFERED = constant('buffered');
export const DUPLICATE = constant('duplicate');
export const STALE = constant('stale');
export const REJECTED = constant('rejected');

/**
 * `out` as a push result. The caller passes what the union says for `outcome` (only in-order
 * releases, or for `late` the one late release and no gaps): the push code holds it, the type
 * cannot.
 */
export function result<T>(out: Release<T>[], outcome: PushOutcome, gaps: readonly GapRange[]): PushResult<T> {
  // Plain stores, not Object.assign: every result array then shares one hidden class.
  const r = out as Release<T>[] & { outcome: PushOutcome; gaps: readonly GapRange[] };
  r.outcome = outcome;
  r.gaps = gaps;
  return r as unknown as PushResult<T>;
}
