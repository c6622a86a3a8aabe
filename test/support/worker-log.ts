// The delivery log the multi-process ledger tests share (Redis and PostgreSQL workers), and the
// truth it must add up to.
import fc from 'fast-check';
import { defineSignature } from '../../src/index.js';
import { type Delivery, playerLog, roundPlan } from '../property/settlement-log.js';

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

/** 40 players x 20 rounds with duplicates, replays, swaps and cross-room late finals (overlap 1). */
export function buildLog(seed: number): Delivery[][] {
  const plans = fc.sample(fc.array(roundPlan, { minLength: 20, maxLength: 20 }), { seed, numRuns: 40 });
  return plans.map((p, i) =>
    playerLog(`player-${i}`, p, 1, (d) => settlement(d)).map((d) => {
      // Rooms are shared between players, so scope totals sum several owners' shares.
      const room = `room-${(i * 3 + Number(d.room.split('room')[1])) % 5}`;
      return { ...d, room, signature: settlement({ ...d, room }) };
    }),
  );
}

/** What applying every unique delivery exactly once gives: counts, balances, room totals, signatures. */
export function truth(players: Delivery[][]) {
  const unique = new Map<string, Delivery>();
  for (const d of players.flat()) unique.set(`${d.player}\n${d.signature}`, d);
  const balances = new Map<string, bigint>();
  const rooms = new Map<string, bigint>();
  const signatures = new Map<string, string[]>();
  for (const d of unique.values()) {
    balances.set(d.player, (balances.get(d.player) ?? 0n) + BigInt(d.net));
    rooms.set(d.room, (rooms.get(d.room) ?? 0n) + BigInt(d.net));
    signatures.set(d.player, [...(signatures.get(d.player) ?? []), d.signature]);
  }
  return { count: unique.size, balances, rooms, signatures };
}
