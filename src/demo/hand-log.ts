import type { DeliveryLog, SettlementTable } from './delivery-log.js';
import { joinRef } from './delivery-log.js';

/** One readable event of a hand-made log: a player joins a room, or a settlement is delivered. */
export type HandEvent =
  | { readonly player: number; readonly join: number }
  | {
      readonly player: number;
      readonly room: number;
      readonly round: number;
      readonly final: boolean;
      readonly net: number;
      /**
       * Creation time for the horizon. Default: `2k` for the instant and `2k + 1` for the final,
       * where k counts the player's rounds in order of their first appearance in the log.
       */
      readonly order?: number;
    };

/**
 * Builds a {@link DeliveryLog} from readable events, for tests and examples: the same
 * `(player, room, round, final)` delivered twice is one settlement delivered twice. Players and
 * rooms are small indices. Stats other than the delivery counts are 0.
 *
 * Usage (the demo is internal to the CLI, not public API):
 *
 *     const log = handLog([
 *       { player: 0, join: 0 },
 *       { player: 0, room: 0, round: 1, final: false, net: 100 },
 *       { player: 0, room: 0, round: 1, final: false, net: 100 }, // a duplicate
 *     ]);
 *     log.settlements.count; // 1
 */
export function handLog(events: readonly HandEvent[]): DeliveryLog {
  const ids = new Map<string, number>();
  const facts: { player: number; room: number; round: number; final: boolean; net: number; order: number }[] =
    [];
  const ref: number[] = [];
  const player: number[] = [];
  let players = 0;
  let rooms = 0;
  let joins = 0;
  const roundIndex = new Map<string, number>();
  const roundsOf = new Map<number, number>();
  for (const e of events) {
    players = Math.max(players, e.player + 1);
    player.push(e.player);
    if ('join' in e) {
      rooms = Math.max(rooms, e.join + 1);
      ref.push(joinRef(e.join));
      joins++;
      continue;
    }
    rooms = Math.max(rooms, e.room + 1);
    const key = `${e.player}/${e.room}/${e.round}/${e.final}`;
    let id = ids.get(key);
    if (id === undefined) {
      id = facts.length;
      ids.set(key, id);
      const roundKey = `${e.player}/${e.room}/${e.round}`;
      let k = roundIndex.get(roundKey);
      if (k === undefined) {
        k = roundsOf.get(e.player) ?? 0;
        roundsOf.set(e.player, k + 1);
        roundIndex.set(roundKey, k);
      }
      facts.push({ ...e, order: e.order ?? 2 * k + (e.final ? 1 : 0) });
    } else if (facts[id]?.net !== e.net) {
      throw new Error(`handLog: settlement ${key} delivered with two different amounts`);
    }
    ref.push(id);
  }
  const table: SettlementTable = {
    count: facts.length,
    player: Uint32Array.from(facts, (f) => f.player),
    room: Uint32Array.from(facts, (f) => f.room),
    round: Int32Array.from(facts, (f) => f.round),
    net: Int32Array.from(facts, (f) => f.net),
    final: Uint8Array.from(facts, (f) => (f.final ? 1 : 0)),
    order: Float64Array.from(facts, (f) => f.order),
  };
  const settlementDeliveries = ref.length - joins;
  return {
    players,
    rooms,
    settlements: table,
    length: ref.length,
    ref: Int32Array.from(ref),
    player: Uint32Array.from(player),
    stats: {
      rounds: 0,
      deliveries: ref.length,
      settlementDeliveries,
      joins,
      duplicates: settlementDeliveries - facts.length,
      replayed: 0,
      lateFinals: 0,
      lateAfterNextInstant: 0,
      reorders: 0,
    },
  };
}

/** Test shorthand: player 0's instant settlement of `round` (net 100 + round) in `room`. */
export const I = (round: number, room = 0): HandEvent => ({
  player: 0,
  room,
  round,
  final: false,
  net: 100 + round,
});
/** Test shorthand: player 0's final settlement of `round` (net -(200 + round)) in `room`. */
export const F = (round: number, room = 0): HandEvent => ({
  player: 0,
  room,
  round,
  final: true,
  net: -(200 + round),
});
/** Test shorthand: player 0 now sits in `room`. */
export const join = (room: number): HandEvent => ({ player: 0, join: room });
