import { currentRoomStrategy } from './current-room.js';
import type { DeliveryLog } from './delivery-log.js';
import type { Strategy } from './strategy.js';

/**
 * The seeds' per-player monotonic guard on the round number: accept iff `round >= last`
 * (past → drop; current → process and advance), booking under the player's current room as
 * last announced by a `join`. Kept as a foil: it is what the demo shows to be wrong.
 *
 * Where it breaks (each visible in the demo's row):
 * - Two settlements per round share one round number, so "current" must pass for the final to
 *   be applied at all; then every repeat of the current round passes too: money doubled.
 * - Round numbers are counted by each room, not by the player: after a move to a room whose
 *   counter is lower, every settlement there is "past" and dropped: money lost.
 * - A sequence number only orders events of its single writer (DESIGN §1 principle 5). Two rooms
 *   settling one player are two writers; comparing their counters means nothing. The same holds
 *   for a final that arrives after the next round began (`--overlap 2`): dropped, lost.
 * - "Current room" is the consumer's guess: a final that arrives after the player moved is
 *   booked under the new room: misbooked.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const strategy = sequenceGuardStrategy(log);
 *     strategy.run(0, log.length, createDecisions(log.length));
 */
export function sequenceGuardStrategy(log: DeliveryLog): Strategy {
  const last = new Float64Array(log.players).fill(Number.NEGATIVE_INFINITY);
  const { round } = log.settlements;
  return currentRoomStrategy(log, 'sequence-guard', 'sequence guard', (p, ref) => {
    const seq = round[ref] as number;
    if (seq < (last[p] as number)) return false;
    last[p] = seq;
    return true;
  });
}
