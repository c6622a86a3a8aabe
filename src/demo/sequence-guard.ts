import { type DeliveryLog, joinRoom } from './delivery-log.js';
import { Decision, type Strategy } from './strategy.js';

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
  const current = new Int32Array(log.players).fill(-1);
  const books = new Float64Array(log.rooms);
  const { round, net } = log.settlements;
  return {
    id: 'sequence-guard',
    name: 'sequence guard',
    run(from, to, out) {
      for (let i = from; i < to; i++) {
        const ref = log.ref[i] as number;
        const p = log.player[i] as number;
        if (ref < 0) {
          current[p] = joinRoom(ref);
          out.outcome[i] = Decision.NONE;
          continue;
        }
        const seq = round[ref] as number;
        if (seq < (last[p] as number)) {
          out.outcome[i] = Decision.BLOCKED;
          continue;
        }
        last[p] = seq;
        const room = current[p] as number;
        books[room] = (books[room] as number) + (net[ref] as number);
        out.outcome[i] = Decision.APPLIED;
        out.room[i] = room;
      }
    },
    async roomTotals() {
      return books.slice();
    },
  };
}
