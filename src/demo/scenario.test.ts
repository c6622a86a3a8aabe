import { describe, expect, it } from 'vitest';
import { checkDeliveryBounds } from './delivery-bounds.js';
import { type DeliveryLog, joinRoom, settlementPayload, settlementSignature } from './delivery-log.js';
import { requiredCapacityOf } from './required-capacity.js';
import { DEFAULT_SCENARIO, generateLog, roomCountFor } from './scenario.js';

const small = { ...DEFAULT_SCENARIO, settlements: 20_000, players: 200 };

describe('generateLog', () => {
  const log = generateLog(DEFAULT_SCENARIO);

  it('keeps the delivery bound (a) and (b) in the default log', () => {
    const check = checkDeliveryBounds(log);
    expect(check.rounds).toBeGreaterThan(40_000);
    expect(check.finalAfterNextInstant).toBe(0);
    expect(check.repeatAfterRoundAfterNext).toBe(0);
  });

  it('needs at most capacity 4 by default, and exactly 4: a window of 3 would be too small', () => {
    expect(requiredCapacityOf(log).capacity).toBe(4);
    for (const seed of [2, 3, 4, 5]) {
      expect(requiredCapacityOf(generateLog({ ...small, seed })).capacity).toBeLessThanOrEqual(4);
    }
  });

  it('is reproducible: same seed, same log; another seed, another log', () => {
    const a = generateLog({ ...small, seed: 42 });
    const b = generateLog({ ...small, seed: 42 });
    const c = generateLog({ ...small, seed: 43 });
    expect(b.ref).toEqual(a.ref);
    expect(b.player).toEqual(a.player);
    expect(b.settlements).toEqual(a.settlements);
    expect(b.stats).toEqual(a.stats);
    expect(c.ref).not.toEqual(a.ref);
  });

  it('delivers every settlement at least once, with non-zero amounts in [-5000, 5000]', () => {
    const delivered = new Uint8Array(log.settlements.count);
    for (const ref of log.ref) if (ref >= 0) delivered[ref] = 1;
    expect(delivered.every((d) => d === 1)).toBe(true);
    expect(log.settlements.count).toBe(DEFAULT_SCENARIO.settlements);
    for (const net of log.settlements.net) {
      expect(net).not.toBe(0);
      expect(Math.abs(net)).toBeLessThanOrEqual(5000);
    }
  });

  it('gives every settlement of a player its own signature (ids and signatures correspond)', () => {
    const seen = new Set<string>();
    for (let id = 0; id < log.settlements.count; id++) {
      const key = `${log.settlements.player[id]} ${settlementSignature(settlementPayload(log.settlements, id))}`;
      expect(seen.has(key)).toBe(false);
      seen.add(key);
    }
  });

  it('orders each player: instant before final, increasing across rounds; rooms count their own rounds', () => {
    const lastOrder = new Map<number, number>();
    const lastRound = new Map<number, number>();
    for (let id = 0; id < log.settlements.count; id += 2) {
      const p = log.settlements.player[id] as number;
      const [oi, of] = [log.settlements.order[id] as number, log.settlements.order[id + 1] as number];
      expect(oi).toBeLessThan(of);
      expect(oi).toBeGreaterThan(lastOrder.get(p) ?? -1);
      lastOrder.set(p, of);
      // (room, round) identifies a round: a room's counter only goes up.
      const room = log.settlements.room[id] as number;
      const round = log.settlements.round[id] as number;
      expect(round).toBeGreaterThan(lastRound.get(room) ?? -1);
      lastRound.set(room, round);
    }
  });

  it('starts every player with a join, and books each round in the room the player last joined', () => {
    const current = new Map<number, number>();
    const playedIn = new Map<number, number>();
    for (let i = 0; i < log.length; i++) {
      const ref = log.ref[i] as number;
      const p = log.player[i] as number;
      if (ref < 0) {
        current.set(p, joinRoom(ref));
        continue;
      }
      expect(current.has(p)).toBe(true);
      const instant = ref - (ref % 2);
      // A round's first delivery happens in the room the player sits in.
      if (!playedIn.has(instant)) {
        playedIn.set(instant, log.settlements.room[instant] as number);
        expect(current.get(p)).toBe(log.settlements.room[instant]);
      }
    }
    expect(log.rooms).toBe(roomCountFor(DEFAULT_SCENARIO.players));
  });

  it('injects every fault at roughly its rate', () => {
    const s = log.stats;
    expect(s.rounds).toBe(50_000);
    expect(s.duplicates / 100_000).toBeGreaterThan(0.04);
    expect(s.duplicates / 100_000).toBeLessThan(0.06);
    expect(s.lateFinals / s.rounds).toBeGreaterThan(0.02);
    expect(s.lateFinals / s.rounds).toBeLessThan(0.04);
    expect(s.replayed).toBeGreaterThan(0);
    // Every round can be reordered but a late final's with nothing else in its block (~3% of
    // rounds): the rate applied is the rate given, less that.
    expect(s.reorders / s.rounds).toBeGreaterThan(DEFAULT_SCENARIO.reorderRate * 0.9);
    expect(s.reorders / s.rounds).toBeLessThan(DEFAULT_SCENARIO.reorderRate * 1.1);
    expect(s.settlementDeliveries).toBe(100_000 + s.duplicates + s.replayed);
    expect(s.deliveries).toBe(s.settlementDeliveries + s.joins);
  });

  it('delivers cross-room late finals after the join, still before the next instant', () => {
    expect(lateFinalsAfterJoin(log)).toBeGreaterThan(log.stats.lateFinals * 0.9);
  });

  it('with overlap 2 lets late finals land after the next instant: (a) breaks, (b) holds, capacity 5', () => {
    const relaxed = generateLog({ ...DEFAULT_SCENARIO, overlap: 2 });
    const check = checkDeliveryBounds(relaxed);
    expect(check.finalAfterNextInstant).toBeGreaterThan(0);
    // A swap of the next round's instant and final can still put a late final before that instant.
    expect(check.finalAfterNextInstant).toBeLessThanOrEqual(relaxed.stats.lateAfterNextInstant);
    expect(check.finalAfterNextInstant).toBeGreaterThan(relaxed.stats.lateAfterNextInstant * 0.9);
    expect(check.repeatAfterRoundAfterNext).toBe(0);
    expect(requiredCapacityOf(relaxed).capacity).toBe(5);
  });

  it('with every rate at 0 delivers each settlement once and needs capacity 1', () => {
    const clean = generateLog({
      ...small,
      dupRate: 0,
      lateRate: 0,
      replayRate: 0,
      reorderRate: 0,
      moveRate: 0,
    });
    expect(clean.stats.settlementDeliveries).toBe(20_000);
    expect(requiredCapacityOf(clean).capacity).toBe(1);
  });

  it('rounds an odd number of settlements up to whole rounds and copes with more players than rounds', () => {
    const odd = generateLog({ ...small, settlements: 7, players: 10 });
    expect(odd.settlements.count).toBe(8);
    expect(odd.stats.rounds).toBe(4);
  });
});

/** Late finals whose first delivery comes after a join of their player that followed their instant. */
function lateFinalsAfterJoin(log: DeliveryLog): number {
  const joinedAt = new Map<number, number>();
  const first = new Int32Array(log.settlements.count).fill(-1);
  let late = 0;
  for (let i = 0; i < log.length; i++) {
    const ref = log.ref[i] as number;
    const p = log.player[i] as number;
    if (ref < 0) {
      joinedAt.set(p, i);
      continue;
    }
    if (first[ref] !== -1) continue;
    first[ref] = i;
    if (ref % 2 === 1 && (joinedAt.get(p) ?? -1) > (first[ref - 1] as number)) late++;
  }
  return late;
}
