// The ledger's read-only "seen before?" check and the optional Bloom pre-check in front of it
// (DESIGN §3.12, docs/pre-checks.md). The invariant that keeps it safe: the filter only ever skips
// this advisory read; `apply` (the one atomic step) still decides every entry it is given, so a
// false positive costs one read and a false negative (an id rotated out, a filter not rebuilt)
// costs the skipped read's benefit, never a drop, a delay or a second booking.
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { withinLimit } from '../core/limits.js';
import type { Emit } from '../core/observer.js';
import { isPlainObject, keysOf, knownKeys, nonEmptyStringArg } from '../core/validate.js';
import { SIGNATURE_HINT } from '../store/apply-command.js';
import type { Store } from '../store/store.js';
import { SeenFilter } from '../windows/seen-filter.js';
import { ownerArg } from './arguments.js';

/** What {@link Ledger.seen} is asked: an entry's owner and signature (its other fields may be there). */
export interface SeenQuery {
  owner: string;
  signature: string;
}

/** A `preCheck` option: a {@link SeenFilter} or undefined. */
export function preCheckOption(value: unknown): SeenFilter | undefined {
  if (value === undefined || value instanceof SeenFilter) return value;
  throw new InvalidOptionError('preCheck', 'a SeenFilter (new SeenFilter({ expected }))', value);
}

/**
 * The filter's id of (owner, signature): the owner's length first, so no two pairs share an id
 * (`('a:b', 'c')` and `('a', 'b:c')` differ). At most 256 + 1024 + 4 UTF-16 units (LIMITS), well
 * under the filter's 4096.
 */
export function preCheckId(owner: string, signature: string): string {
  return `${owner.length}:${owner}${signature}`;
}

// Only `owner` and `signature` are read: a whole ledger entry may be passed.
const QUERY_KEYS = keysOf<SeenQuery & { deltas: true; scope: true; order: true; meta: true }>({
  owner: true,
  signature: true,
  deltas: true,
  scope: true,
  order: true,
  meta: true,
});

/** `query`, checked as `apply` checks an entry's owner and signature. */
export function seenArgs(query: SeenQuery): { owner: string; signature: string } {
  if (!isPlainObject(query))
    throw new InvalidArgumentError('query', 'an object like { owner, signature }', query);
  knownKeys('', query, QUERY_KEYS, 'argument');
  const owner = ownerArg('owner', query.owner);
  const signature = withinLimit(
    'signature',
    nonEmptyStringArg('signature', query.signature),
    'signatureBytes',
    SIGNATURE_HINT,
  );
  return { owner, signature };
}

/**
 * `true` when the owner's window holds `signature` (read from the store: apply would answer
 * `duplicate`); `false` when it does not, or when `filter` proves it was never added here (no read).
 */
export async function seenIn(
  store: Store,
  ledger: string,
  filter: SeenFilter | undefined,
  emit: Emit | undefined,
  owner: string,
  signature: string,
): Promise<boolean> {
  if (filter !== undefined && !filter.mightContain(preCheckId(owner, signature))) {
    if (emit !== undefined) emit({ part: 'ledger', type: 'pre-check', ledger, outcome: 'skipped' });
    return false;
  }
  const window = await store.ledgerWindow(ledger, owner);
  const seen = window.signatures.includes(signature);
  if (emit !== undefined)
    emit({ part: 'ledger', type: 'pre-check', ledger, outcome: seen ? 'read-seen' : 'read-unseen' });
  return seen;
}

/** Adds every signature of each owner's window to `filter`; resolves to how many were added. */
export async function rebuildFrom(
  store: Store,
  ledger: string,
  filter: SeenFilter,
  owners: Iterable<string>,
): Promise<number> {
  if (
    owners === null ||
    typeof (owners as { [Symbol.iterator]?: unknown })?.[Symbol.iterator] !== 'function'
  ) {
    throw new InvalidArgumentError('owners', 'an iterable of owners', owners);
  }
  // Checked before any read, so a bad owner changes nothing.
  const checked = Array.from(owners, (o, i) => ownerArg(`owners[${i}]`, o));
  let added = 0;
  for (const owner of checked) {
    const window = await store.ledgerWindow(ledger, owner);
    for (const signature of window.signatures) {
      filter.add(preCheckId(owner, signature));
      added++;
    }
  }
  return added;
}
