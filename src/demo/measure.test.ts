import { describe, expect, it } from 'vitest';
import { type HandEvent, handLog } from './hand-log.js';
import { isExact, measure, type StrategyRow, truthRoomTotals } from './measure.js';
import { createDecisions, Decision } from './strategy.js';

const s = (room: number, round: number, final: boolean, net: number): HandEvent => ({
  player: 0,
  room,
  round,
  final,
  net,
});

describe('measure', () => {
  // ids: 0 = (room 0, r1, instant, +100), 1 = (room 0, r1, final, -40), 2 = (room 1, r2, instant, +7)
  const log = handLog([
    { player: 0, join: 0 },
    s(0, 1, false, 100),
    s(0, 1, true, -40),
    s(1, 2, false, 7),
    s(0, 1, false, 100),
  ]);

  it('sums the truth per room', () => {
    expect([...truthRoomTotals(log)]).toEqual([60, 7]);
  });

  it('counts lost, doubled, misbooked and rooms off against the truth', () => {
    const d = createDecisions(log.length);
    d.outcome.set([Decision.NONE, Decision.APPLIED, Decision.STALE, Decision.APPLIED, Decision.APPLIED]);
    // settlement 2 (room 1) booked under room 0; settlement 0 applied twice; settlement 1 only stale.
    d.room.set([0, 0, 0, 0, 0]);
    const books = new Float64Array([100 + 7 + 100, 0]);
    const row = measure(log, d, books, truthRoomTotals(log), { id: 'x', strategy: 'x', ms: 2 });
    expect(row).toMatchObject({
      delivered: 4,
      applied: 3,
      blocked: 0,
      stale: 1,
      lostCount: 1,
      moneyLost: 40,
      staleOnlyLost: 1,
      doubledCount: 1,
      moneyDoubled: 100,
      misbookedCount: 1,
      moneyMisbooked: 7,
      roomsOff: 2,
      roomGap: 207 - 60 + 7,
      ms: 2,
      perSecond: 2000,
    });
  });

  it('is exact when each settlement is applied once under its own room', () => {
    const d = createDecisions(log.length);
    d.outcome.set([Decision.NONE, Decision.APPLIED, Decision.APPLIED, Decision.APPLIED, Decision.BLOCKED]);
    d.room.set([0, 0, 0, 1, 0]);
    const row = measure(log, d, truthRoomTotals(log), truthRoomTotals(log), {
      id: 'x',
      strategy: 'x',
      ms: 0,
    });
    expect(row).toMatchObject({ lostCount: 0, doubledCount: 0, misbookedCount: 0, roomsOff: 0, blocked: 1 });
    expect(row.perSecond).toBe(0);
  });
});

describe('isExact (the rule exit code 1 is judged on)', () => {
  const exact: StrategyRow = {
    id: 'x',
    strategy: 'x',
    delivered: 10,
    applied: 8,
    blocked: 2,
    stale: 0,
    lostCount: 0,
    moneyLost: 0,
    staleOnlyLost: 0,
    doubledCount: 0,
    moneyDoubled: 0,
    misbookedCount: 0,
    moneyMisbooked: 0,
    roomsOff: 0,
    roomGap: 0,
    ms: 1,
    perSecond: 10_000,
  };

  it('is true when nothing is lost, doubled or misbooked and every room is exact', () => {
    expect(isExact(exact)).toBe(true);
    // Blocked repeats and stale answers are what exactly-once looks like, not a failure.
    expect(isExact({ ...exact, blocked: 5, stale: 3 })).toBe(true);
  });

  // Each alone: a room can come out exact while its settlements are not (a lost +40 and a
  // doubled +40 cancel out), and a lost settlement of net 0 moves no money at all.
  const failures: [string, Partial<StrategyRow>][] = [
    ['money lost', { lostCount: 1, moneyLost: 40 }],
    ['a settlement of net 0 lost', { lostCount: 1 }],
    ['money doubled', { doubledCount: 1, moneyDoubled: 40 }],
    ['settlements misbooked', { misbookedCount: 1, moneyMisbooked: 7 }],
    ['rooms off', { roomsOff: 1, roomGap: 3 }],
  ];
  for (const [what, fields] of failures) {
    it(`is false for ${what}`, () => {
      expect(isExact({ ...exact, ...fields })).toBe(false);
    });
  }
});
