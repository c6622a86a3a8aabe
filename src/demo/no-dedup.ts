import type { DeliveryLog } from './delivery-log.js';
import { Decision, type Strategy } from './strategy.js';

/**
 * Applies every delivery, booked under the settlement's own room: the baseline that shows what
 * the transport's at-least-once delivery costs when nobody deduplicates (every repeat doubles).
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const strategy = noDedupStrategy(log);
 *     strategy.run(0, log.length, createDecisions(log.length));
 */
export function noDedupStrategy(log: DeliveryLog): Strategy {
  const books = new Float64Array(log.rooms);
  const { room, net } = log.settlements;
  return {
    id: 'no-dedup',
    name: 'no dedup',
    run(from, to, out) {
      for (let i = from; i < to; i++) {
        const ref = log.ref[i] as number;
        if (ref < 0) {
          out.outcome[i] = Decision.NONE;
          continue;
        }
        const r = room[ref] as number;
        books[r] = (books[r] as number) + (net[ref] as number);
        out.outcome[i] = Decision.APPLIED;
        out.room[i] = r;
      }
    },
    async roomTotals() {
      return books.slice();
    },
  };
}
