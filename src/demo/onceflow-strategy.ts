import { createLedger, type Ledger, memoryStore } from '../index.js';
import {
  type DeliveryLog,
  playerName,
  roomName,
  settlementPayload,
  settlementSignature,
} from './delivery-log.js';
import { Decision, type Strategy } from './strategy.js';

// 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap. DESIGN §3.2: if
// (a) each round's final is first delivered before the next round's instant and (b) every repeat
// of a round arrives before the round after next begins, at most 3 distinct other signatures
// (X's sibling and the next round's two) are first seen between X's first and last delivery, so
// a FIFO window of 4 never lets a repeat through. The demo measures what its own log required.
// Do not raise it to "be safe": a larger window hides a broken delivery bound instead of
// reporting it. With `--overlap 2` (a) no longer holds, the log needs 5, and the horizon turns
// the would-be doubles into `stale` for reconciliation.
/** The settlement window capacity the demo's onceflow row runs with. */
export const SETTLEMENT_CAPACITY = 4;

// One below the derivation, on purpose: the rows with 3 show that the bound is tight (without
// orders the window doubles money) and that the horizon makes a too-small window fail safe.
/** The deliberately too-small capacity of the comparison rows. */
export const TOO_SMALL_CAPACITY = 3;

/** Options of {@link onceflowStrategy}. */
export interface OnceflowStrategyOptions {
  readonly capacity: number;
  /** Pass each settlement's creation time as `order`, so the horizon can answer `stale`. */
  readonly withOrder: boolean;
}

/**
 * The library's way: one {@link createLedger} on the memory store; each settlement applied with
 * its self-contained signature as the dedup key, the player as owner and its own room as scope.
 *
 * A settlement is booked under the room in its payload, never a "current room", so a final
 * that arrives after the player moved is booked where it was played. `join` events are ignored:
 * onceflow needs no consumer-side notion of where a player sits.
 *
 * A legitimate first delivery turns `stale` only when a signature created after it was already
 * evicted, i.e. more signatures were delivered between its creation and its first delivery
 * than the window holds; within the delivery bound it never happens. The demo counts a
 * settlement that was only ever `stale` as lost money (the report shows how many).
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const strategy = onceflowStrategy(log, { capacity: SETTLEMENT_CAPACITY, withOrder: true });
 *     await strategy.run(0, log.length, createDecisions(log.length));
 */
export function onceflowStrategy(log: DeliveryLog, options: OnceflowStrategyOptions): Strategy {
  const { capacity, withOrder } = options;
  // The journal is a record for reconciliation, not dedup state: the demo reads per-room totals
  // instead, so it keeps none and a million settlements stay in bounded memory.
  const ledger = createLedger({
    store: memoryStore({ journal: { maxEntries: 0 } }),
    capacity,
    horizon: withOrder,
  });
  const table = log.settlements;
  const owners = namesOf(log.players, playerName);
  const rooms = namesOf(log.rooms, roomName);

  return {
    id: withOrder ? `onceflow-c${capacity}` : `onceflow-c${capacity}-no-order`,
    name: withOrder
      ? `onceflow window (capacity ${capacity})`
      : `onceflow window (capacity ${capacity}, no order)`,
    async run(from, to, out) {
      for (let i = from; i < to; i++) {
        const id = log.ref[i] as number;
        out.outcome[i] =
          id < 0 ? Decision.NONE : await applySettlement(ledger, log, id, withOrder, owners, rooms);
        if (id >= 0) out.room[i] = table.room[id] as number;
      }
    },
    async roomTotals() {
      const totals = new Float64Array(log.rooms);
      for (let r = 0; r < log.rooms; r++) {
        const coins = (await ledger.totals(rooms[r] as string)).coins;
        totals[r] = coins === undefined ? 0 : Number(coins);
      }
      return totals;
    },
  };
}

function namesOf(n: number, name: (i: number) => string): string[] {
  return Array.from({ length: n }, (_, i) => name(i));
}

/**
 * Applies settlement `id` of the log to `ledger` the library's way (owner = player, scope = its
 * own room, signature from its payload, order = its creation time when `withOrder`) and returns
 * the decision. Shared by the in-process rows and the Redis workers.
 */
export async function applySettlement(
  ledger: Ledger,
  log: DeliveryLog,
  id: number,
  withOrder: boolean,
  owners?: readonly string[],
  rooms?: readonly string[],
): Promise<Decision> {
  const table = log.settlements;
  const payload = settlementPayload(table, id);
  const player = table.player[id] as number;
  const room = table.room[id] as number;
  const owner = owners?.[player] ?? playerName(player);
  const scope = rooms?.[room] ?? roomName(room);
  const entry = { owner, signature: settlementSignature(payload), deltas: { coins: payload.net }, scope };
  const result = await ledger.apply(withOrder ? { ...entry, order: table.order[id] as number } : entry);
  return result.outcome === 'applied'
    ? Decision.APPLIED
    : result.outcome === 'duplicate'
      ? Decision.BLOCKED
      : Decision.STALE;
}
