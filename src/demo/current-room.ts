import { type DeliveryLog, joinRoom } from './delivery-log.js';
import { Decision, type Strategy } from './strategy.js';

/**
 * The skeleton the naive guards share: each `join` moves the player to a room, and a settlement
 * that `admit(player, ref)` lets through is booked under the player's *current* room (the
 * consumer's guess, so a final that arrives after a move is misbooked); one it refuses is
 * counted as blocked. The guards differ only in `admit`.
 */
export function currentRoomStrategy(
  log: DeliveryLog,
  id: string,
  name: string,
  admit: (player: number, ref: number) => boolean,
): Strategy {
  const current = new Int32Array(log.players).fill(-1);
  const books = new Float64Array(log.rooms);
  const { net } = log.settlements;
  return {
    id,
    name,
    run(from, to, out) {
      for (let i = from; i < to; i++) {
        const ref = log.ref[i] as number;
        const p = log.player[i] as number;
        if (ref < 0) {
          current[p] = joinRoom(ref);
          out.outcome[i] = Decision.NONE;
          continue;
        }
        if (!admit(p, ref)) {
          out.outcome[i] = Decision.BLOCKED;
          continue;
        }
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
