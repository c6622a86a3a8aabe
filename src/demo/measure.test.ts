import { describe, expect, it } from 'vitest';
import { type HandEvent, handLog } from './hand-log.js';
import { measure, truthRoomTotals } from './measure.js';
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
