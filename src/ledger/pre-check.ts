// The ledger's read-only "seen before?" check and the optional Bloom pre-check in front of it
// (DESIGN §3.12, docs/pre-checks.md). The invariant that keeps it safe: the filter only ever skips
// this advisory read; `apply` (the one atomic step) still decides every entry it is given, so a
// false positive costs one read and a false negative (an id rotated out, a filter not rebuilt)
// costs the skipped read's benefit, never a drop, a delay or a second booking.
import { InvalidArgumentError } from '../core/errors.js';
import { withinLimit } from '../core/limits.js';
import type { Emit } from '../core/observer.js';
import { isPlainObject, knownKeys, nonEmptyStringArg } from '../core/validate.js';
import { SIGNATURE_HINT } from '../store/apply-command.js';
import type { Store } from '../store/store.js';
import type { SeenFilter } from '../windows/seen-filter.js';
import { ownerArg } from './arguments.js';

/** What {@link Ledger.seen} is asked: an entry's owner and signature (its other fields may be there). */
export interface SeenQuery {
  owner: string;
  signature: string;
}

// Owners per rebuildPreCheck call: 100,000 owner strings of up to 256 bytes is at most ~26 MB held
// at once; a larger population is paged by the caller (its windows are read anyway, one each).
const MAX_REBUILD_OWNERS = 100_000;
// Window reads in flight: 16 hides a remote store's round trip (16 x ~0.2 ms of server time per
// 1 ms round trip) without crowding a shared pool or a Redis client's pipeline.
const REBUILD_LANES = 16;

/**
 * The filter's id of (owner, signature): the owner's length first, so no two pairs share an id
 * (`('a:b', 'c')` and `('a', 'b:c')` differ). At most 256 + 1024 + 4 UTF-16 units (LIMITS), well
 * under the filter's 4096.
 */
export function preCheckId(owner: string, signature: string): string {
  return `${owner.length}:${owner}${signature}`;
}

/**
 * `query`, checked as `apply` checks an entry's owner and signature. `fields`: the keys a query
 * may carry (a ledger entry's: only `owner` and `signature` are read, so a whole entry may be passed).
 */
export function seenArgs(query: SeenQuery, fields: readonly string[]): { owner: string; signature: string } {
  if (!isPlainObject(query))
    throw new InvalidArgumentError('query', 'an object like { owner, signature }', query);
  knownKeys('', query, fields, 'argument');
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
  // Checked before any read, so a bad owner (or too many) changes nothing.
  const checked: string[] = [];
  for (const o of owners) {
    if (checked.length === MAX_REBUILD_OWNERS) {
      throw new InvalidArgumentError(
        'owners',
        `at most ${MAX_REBUILD_OWNERS} per call (page them)`,
        `more than ${MAX_REBUILD_OWNERS}`,
      );
    }
    checked.push(ownerArg(`owners[${checked.length}]`, o));
  }
  let added = 0;
  let next = 0;
  const lane = async () => {
    while (next < checked.length) {
      const owner = checked[next++] as string;
      const window = await store.ledgerWindow(ledger, owner);
      for (const signature of window.signatures) {
        filter.add(preCheckId(owner, signature));
        added++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(REBUILD_LANES, checked.length) }, lane));
  return added;
}
