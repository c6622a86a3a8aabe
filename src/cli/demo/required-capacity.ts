import type { DemoLog } from './log.js';

/** The capacity a delivery log required, and the signature that set it. */
export interface RequiredCapacity {
  /** The smallest FIFO window capacity that lets no repeat of this log through. */
  readonly capacity: number;
  /** Distinct other signatures first seen between the worst signature's first and last delivery. */
  readonly others: number;
  /** The key (settlement id) that needed the most, or -1 when nothing was ever repeated. */
  readonly worstKey: number;
  /** The owner of `worstKey`, or -1. */
  readonly worstOwner: number;
}

/** DESIGN §3.2's rule, as the report prints it. */
export const CAPACITY_RULE =
  'a FIFO window of capacity C never lets a repeat through iff, for every signature X, fewer than C ' +
  "distinct other signatures are first seen (for X's owner) between X's first and X's last delivery";

/**
 * Measures the window capacity a delivery sequence required (DESIGN §3.2): per owner, for each
 * key X, the number of distinct other keys first seen between X's first and X's last delivery;
 * the answer is the maximum plus one.
 *
 * O(n) with first-appearance prefix counts: each owner keeps a running count of distinct keys
 * seen; a key remembers the count at its first delivery, and at any later delivery the
 * difference is the number of keys first seen since. Keys are dense integers, each belonging to
 * one owner; a negative key is not a keyed event (a `join`) and is skipped.
 *
 * Usage (internal to the CLI):
 *
 *     // owner 0 delivers keys a=0, b=1, c=2, then a again: 2 others were first seen in between.
 *     measureRequiredCapacity([0, 0, 0, 0], [0, 1, 2, 0], 3, 1).capacity; // 3
 */
export function measureRequiredCapacity(
  owners: ArrayLike<number>,
  keys: ArrayLike<number>,
  keyCount: number,
  ownerCount: number,
): RequiredCapacity {
  const seen = new Int32Array(ownerCount);
  // 0 = not seen yet; otherwise the owner's distinct count right after this key's first delivery.
  const firstRank = new Int32Array(keyCount);
  let others = 0;
  let worstKey = -1;
  let worstOwner = -1;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as number;
    if (key < 0) continue;
    const owner = owners[i] as number;
    const rank = firstRank[key] as number;
    if (rank === 0) {
      const next = (seen[owner] as number) + 1;
      seen[owner] = next;
      firstRank[key] = next;
      continue;
    }
    const between = (seen[owner] as number) - rank;
    if (between > others || worstKey < 0) {
      others = between;
      worstKey = key;
      worstOwner = owner;
    }
  }
  return { capacity: others + 1, others, worstKey, worstOwner };
}

/**
 * {@link measureRequiredCapacity} over a generated log (keys are settlement ids). Late replays are
 * left out: they come minutes later, beyond any window's business bound by design, and are
 * the horizon's to answer (`stale`), not the capacity's.
 */
export function requiredCapacityOf(log: DemoLog): RequiredCapacity {
  const keys = log.deliveries.map((d) => (d.settlement && !d.lateReplay ? d.settlement.id : -1));
  const owners = log.deliveries.map((d) => d.player);
  return measureRequiredCapacity(owners, keys, log.settlements.length, log.players);
}

/**
 * {@link measureRequiredCapacity} over readable `[owner, signature]` pairs, for hand-made logs.
 *
 * Usage (internal to the CLI):
 *
 *     requiredCapacityOfPairs([['p', 'a'], ['p', 'b'], ['p', 'a']]); // 2
 */
export function requiredCapacityOfPairs(
  log: ReadonlyArray<readonly [owner: string, signature: string]>,
): number {
  const ownerIds = new Map<string, number>();
  const keyIds = new Map<string, number>();
  const owners: number[] = [];
  const keys: number[] = [];
  for (const [owner, signature] of log) {
    let o = ownerIds.get(owner);
    if (o === undefined) ownerIds.set(owner, (o = ownerIds.size));
    // Keys are per owner: the same signature under two owners is two windows' business.
    const k = `${o}\u0000${signature}`;
    let id = keyIds.get(k);
    if (id === undefined) keyIds.set(k, (id = keyIds.size));
    owners.push(o);
    keys.push(id);
  }
  return measureRequiredCapacity(owners, keys, keyIds.size, ownerIds.size).capacity;
}
