import { describe, expect, it } from 'vitest';
import { createLedger } from '../../index.js';
import { setNxEx, ttlCoveringEveryRepeat, uniqueIndex } from './defences.js';
import {
  DEFAULT_SCENARIO,
  type Delivery,
  type DemoLog,
  generateLog,
  playerName,
  type Settlement,
} from './log.js';
import { heldBytes, isExact, measure, type Run } from './measure.js';
import { noDedup, perTypeFlags, sequenceGuard } from './naive.js';
import { onceflowRow } from './onceflow.js';
import { openStore } from './store.js';

// ids: 0 = (room 0, round 1, instant, +100), 1 = (room 0, round 1, final, -40), 2 = (room 1, round 2, instant, +7)
const settlement = (id: number, room: number, round: number, final: boolean, net: number): Settlement => ({
  id,
  player: 0,
  room,
  round,
  final,
  net,
  createdAt: id,
  signature: `s${id}`,
});
const S = [settlement(0, 0, 1, false, 100), settlement(1, 0, 1, true, -40), settlement(2, 1, 2, false, 7)];
const at = (ms: number, s: Settlement, lateReplay = false): Delivery => ({
  player: 0,
  at: ms,
  settlement: s,
  lateReplay,
});
const log: DemoLog = {
  players: 1,
  rooms: 2,
  settlements: S,
  // joins room 0; 0, 1; moves to room 1; 2; then 0 again 2 minutes later.
  deliveries: [
    { player: 0, at: 0, join: 0 },
    at(1, S[0]!),
    at(2, S[1]!),
    { player: 0, at: 3, join: 1 },
    at(4, S[2]!),
    at(120_000, S[0]!, true),
  ],
  stats: {
    rounds: 2,
    settlementDeliveries: 4,
    joins: 2,
    duplicates: 0,
    replayed: 0,
    lateReplayed: 1,
    lateFinals: 0,
    reorders: 0,
  },
};
const meta = { id: 'x', strategy: 'x', ms: 2 };

describe('measure', () => {
  it('counts lost, doubled, misbooked and rooms off against the truth', () => {
    const run: Run = {
      outcome: [undefined, 'applied', 'stale', undefined, 'applied', 'applied'],
      room: [0, 0, 0, 0, 0, 0],
    };
    expect(measure(log, run, meta)).toMatchObject({
      delivered: 4,
      applied: 3,
      stale: 1,
      lostCount: 1,
      moneyLost: 40,
      staleOnlyLost: 1,
      doubledCount: 1,
      moneyDoubled: 100,
      misbookedCount: 1,
      moneyMisbooked: 7,
      roomsOff: 2,
      perSecond: 2000,
    });
  });
});

describe('the strategies, on a hand-made log', () => {
  const row = async (strategy: { run(l: DemoLog): Run | Promise<Run> }) =>
    measure(log, await strategy.run(log), meta);

  it('unique index: exact, one key per settlement held', async () => {
    const r = await row(uniqueIndex);
    expect(isExact(r)).toBe(true);
    expect(r).toMatchObject({ blocked: 1, heldKeys: 3, heldBytes: 3 * 2 + 3 * 61 });
  });

  it('SET NX EX: doubles a replay after its TTL, refuses it within; the covering TTL is the next whole minute', async () => {
    expect(await row(setNxEx(60_000))).toMatchObject({ doubledCount: 1, moneyDoubled: 100, heldKeys: 3 });
    expect(ttlCoveringEveryRepeat(log)).toBe(120_000);
    const long = await row(setNxEx(ttlCoveringEveryRepeat(log)));
    expect(isExact(long)).toBe(true);
  });

  it('onceflow on the memory store: exact with a window of 4; with 1 and orders, the late replay is stale', async () => {
    const store = await openStore(undefined);
    const c4 = await row(onceflowRow(4, true, store));
    expect(isExact(c4)).toBe(true);
    expect(c4).toMatchObject({ blocked: 1, stale: 0, heldKeys: 3 });
    const c1 = await row(onceflowRow(1, true, store));
    expect(c1).toMatchObject({ stale: 1, doubledCount: 0, heldKeys: 1 });
    expect((await row(onceflowRow(1, false, store))).doubledCount).toBe(1);
  });

  it('the naive guards book under the current room; no dedup applies every repeat', async () => {
    expect(await row(noDedup)).toMatchObject({ doubledCount: 1, misbookedCount: 0 });
    // Settlement 2 is booked under room 1 (the current room, and its own): no misbooking here, but
    // the replay of round 1 is "past" for the guard (round 1 < 2) and doubled by the flags.
    expect(await row(sequenceGuard)).toMatchObject({ blocked: 1, doubledCount: 0 });
    expect(await row(perTypeFlags)).toMatchObject({ doubledCount: 1 });
  });
});

describe('onceflow on a generated log', () => {
  it("onceflow's memory is what its windows hold at the end: each player's last C signatures", async () => {
    const generated = generateLog({ ...DEFAULT_SCENARIO, settlements: 2_000, players: 20 });
    const store = await openStore(undefined);
    for (const [capacity, withOrder] of [
      [3, true],
      [3, false],
      [4, true],
    ] as const) {
      const strategy = onceflowRow(capacity, withOrder, store);
      const r = measure(generated, await strategy.run(generated), meta);
      const ledger = createLedger({ store: store.store, name: strategy.id, capacity, horizon: withOrder });
      let keys = 0;
      let names = 0;
      for (let p = 0; p < generated.players; p++) {
        const { signatures } = await ledger.window(playerName(p));
        keys += signatures.length;
        for (const sig of signatures) names += sig.length;
      }
      expect({ keys: r.heldKeys, bytes: r.heldBytes }).toEqual({ keys, bytes: heldBytes(names, keys) });
    }
  });
});
