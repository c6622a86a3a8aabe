import { InvalidArgumentError } from '../core/errors.js';
import type { LedgerApplyCommand } from './store.js';

/**
 * Checks a store command's deltas as a direct caller may have built them (the ledger builds them
 * right): `[field, bigint]` pairs, each field once. A field twice would be added twice to the
 * balance and, on Redis, once to the scope total (the script reads every total before it writes
 * any): refused, before anything changes, in every store alike.
 */
export function checkDeltaPairs(deltas: LedgerApplyCommand['deltas']): void {
  const seen = new Set<string>();
  for (const pair of deltas) {
    if (!Array.isArray(pair) || typeof pair[0] !== 'string' || typeof pair[1] !== 'bigint') {
      throw new InvalidArgumentError('deltas', '[field, bigint] pairs', pair);
    }
    if (seen.has(pair[0])) throw new InvalidArgumentError('deltas', 'each field once', pair[0]);
    seen.add(pair[0]);
  }
}
