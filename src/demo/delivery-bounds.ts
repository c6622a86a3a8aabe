import type { DeliveryLog } from './delivery-log.js';

/** How often a log broke each half of DESIGN §3.2's delivery bound. */
export interface BoundCheck {
  /** Rounds checked for (a) (every round that has a next round). */
  readonly rounds: number;
  /** (a) broken: a round's final first delivered after the next round's instant. */
  readonly finalAfterNextInstant: number;
  /** (b) broken: a repeat of a round delivered after the round after next began. */
  readonly repeatAfterRoundAfterNext: number;
}

/**
 * Checks a generated log against the delivery bound the capacity-4 derivation relies on:
 * (a) each round's final is first delivered before the next round's instant, and (b) every
 * repeat of a round arrives before the round after next begins (its first delivery of either
 * settlement). O(n): relies on the generator's ids (instant `2k`, final `2k + 1`, and a player's
 * rounds get increasing ids).
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const check = checkDeliveryBounds(generateLog(DEFAULT_SCENARIO));
 *     check.finalAfterNextInstant; // 0 with overlap 1
 */
export function checkDeliveryBounds(log: DeliveryLog): BoundCheck {
  const { count } = log.settlements;
  const first = new Int32Array(count).fill(-1);
  const last = new Int32Array(count);
  for (let i = 0; i < log.length; i++) {
    const id = log.ref[i] as number;
    if (id < 0) continue;
    if (first[id] === -1) first[id] = i;
    last[id] = i;
  }
  // Per player, the instant ids of the previous two rounds (-1 when none).
  const prev = new Int32Array(log.players).fill(-1);
  const prevPrev = new Int32Array(log.players).fill(-1);
  let rounds = 0;
  let a = 0;
  let b = 0;
  for (let instant = 0; instant < count; instant += 2) {
    const p = log.settlements.player[instant] as number;
    const begins = Math.min(first[instant] as number, first[instant + 1] as number);
    const r1 = prev[p] as number;
    if (r1 >= 0) {
      rounds++;
      if ((first[r1 + 1] as number) > (first[instant] as number)) a++;
    }
    const r2 = prevPrev[p] as number;
    if (r2 >= 0 && Math.max(last[r2] as number, last[r2 + 1] as number) > begins) b++;
    prevPrev[p] = r1;
    prev[p] = instant;
  }
  return { rounds, finalAfterNextInstant: a, repeatAfterRoundAfterNext: b };
}
