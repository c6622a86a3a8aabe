import { currentRoomStrategy } from './current-room.js';
import type { DeliveryLog } from './delivery-log.js';
import type { Strategy } from './strategy.js';

/**
 * Per player `{ round, instantDone, finalDone }`: a settlement of the remembered round passes
 * once per type; a settlement of any other round resets the flags to that round. Books under
 * the player's current room (from `join`). The "obvious fix" for the sequence guard's
 * two-settlements-per-round problem, and still wrong:
 * - It remembers one round. A queue-recovery replay of rounds r-1 and r, or a late final that
 *   arrives after the next round's instant, resets the flags to an old round and back: every
 *   settlement of the replay is applied again (money doubled).
 * - A final that arrives after the player moved is booked under the new room (misbooked).
 * - Round numbers of different rooms can coincide, so even "same round" is not identity;
 *   a signature of the settlement's own fields is.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const strategy = perTypeFlagsStrategy(log);
 *     strategy.run(0, log.length, createDecisions(log.length));
 */
export function perTypeFlagsStrategy(log: DeliveryLog): Strategy {
  const lastRound = new Float64Array(log.players).fill(Number.NaN);
  // Bit 0: instant done, bit 1: final done.
  const flags = new Uint8Array(log.players);
  const { round, final } = log.settlements;
  return currentRoomStrategy(log, 'per-type-flags', 'per-type flags', (p, ref) => {
    const r = round[ref] as number;
    if (r !== lastRound[p]) {
      lastRound[p] = r;
      flags[p] = 0;
    }
    const bit = final[ref] === 1 ? 2 : 1;
    if (((flags[p] as number) & bit) !== 0) return false;
    flags[p] = (flags[p] as number) | bit;
    return true;
  });
}
