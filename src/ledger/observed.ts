// The ledger's events (docs/observability.md): each store answer of an apply or a resolve, told to
// the ledger's observer once it settles. Only built for an observed ledger.
import { type Emit, storeOutcomeOf } from '../core/observer.js';
import type { LedgerApplyResult, LedgerResolveResult } from '../store/store.js';

/** `answer`, reported as a `ledger.<type>` event when it settles (`failed` on a rejection). */
export function observed<R extends LedgerApplyResult | LedgerResolveResult>(
  answer: Promise<R>,
  emit: Emit,
  type: R extends LedgerApplyResult ? 'apply' : 'resolve',
  ledger: string,
  owner: string,
): Promise<R> {
  return answer.then(
    (r) => {
      // The union of outcomes is checked by the event types: a new store outcome fails to compile.
      if (type === 'apply')
        emit({ part: 'ledger', type: 'apply', ledger, outcome: (r as LedgerApplyResult).outcome, owner });
      else
        emit({ part: 'ledger', type: 'resolve', ledger, outcome: (r as LedgerResolveResult).outcome, owner });
      return r;
    },
    (err: unknown) => {
      emit({ part: 'ledger', type, ledger, outcome: 'failed', storeOutcome: storeOutcomeOf(err), owner });
      throw err;
    },
  );
}
