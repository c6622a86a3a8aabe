import { describe, expect, it } from 'vitest';
import { F, type HandEvent, handLog, I, join } from './hand-log.js';
import { evaluateStrategy } from './run-demo.js';
import { sequenceGuardStrategy } from './sequence-guard.js';

// Player 0 throughout; nets differ per settlement so sums identify them.
const run = (events: HandEvent[]) => evaluateStrategy(handLog(events), sequenceGuardStrategy);

describe('sequence guard (the seeds per-player monotonic round guard)', () => {
  it('is exact on an in-order log and drops repeats of past rounds', async () => {
    const row = await run([join(0), I(1), F(1), I(2), F(1), I(1), F(2)]);
    expect(row).toMatchObject({ applied: 4, blocked: 2, lostCount: 0, doubledCount: 0, misbookedCount: 0 });
    expect(row.roomsOff).toBe(0);
  });

  it('doubles a repeat of the current round: two settlements share its number, so "current" must pass', async () => {
    const row = await run([join(0), I(1), F(1), I(1)]);
    expect(row.doubledCount).toBe(1);
    expect(row.moneyDoubled).toBe(101);
  });

  it('loses every round after a move to a room whose counter is lower (two writers, two sequences)', async () => {
    const row = await run([join(0), I(900), F(900), join(1), I(5, 1), F(5, 1), I(6, 1), F(6, 1)]);
    expect(row.lostCount).toBe(4);
    expect(row.moneyLost).toBe(105 + 205 + 106 + 206);
  });

  it('books a final that arrives after the move under the new room', async () => {
    const row = await run([join(0), I(1), join(1), F(1), I(1, 1), F(1, 1)]);
    expect(row.misbookedCount).toBe(1);
    expect(row.moneyMisbooked).toBe(201);
    expect(row.roomsOff).toBe(2);
  });

  it('loses a final that lands after the next round began (overlap 2)', async () => {
    const row = await run([join(0), I(1), I(2), F(1), F(2)]);
    expect(row.lostCount).toBe(1);
    expect(row.moneyLost).toBe(201);
  });
});
