import { describe, expect, it } from 'vitest';
import { F, type HandEvent, handLog, I, join } from './hand-log.js';
import { perTypeFlagsStrategy } from './per-type-flags.js';
import { evaluateStrategy } from './run-demo.js';

const run = (events: HandEvent[]) => evaluateStrategy(handLog(events), perTypeFlagsStrategy);

describe('per-type flags ({ round, instantDone, finalDone } per player)', () => {
  it('blocks a repeat inside the remembered round, and handles two settlements per round', async () => {
    const row = await run([join(0), F(1), I(1), F(1), I(1), I(2), F(2)]);
    expect(row).toMatchObject({ applied: 4, blocked: 2, lostCount: 0, doubledCount: 0, roomsOff: 0 });
  });

  it('applies a queue-recovery replay of rounds r-1 and r again: it remembers one round', async () => {
    const row = await run([join(0), I(1), F(1), I(2), F(2), I(1), F(1), I(2), F(2)]);
    expect(row.doubledCount).toBe(4);
    expect(row.moneyDoubled).toBe(101 + 201 + 102 + 202);
  });

  it('applies a repeat again after a late final reset the flags (overlap 2)', async () => {
    const row = await run([join(0), I(1), I(2), F(1), I(2), F(2)]);
    expect(row.doubledCount).toBe(1);
    expect(row.moneyDoubled).toBe(102);
  });

  it('books a final that arrives after the move under the new room', async () => {
    const row = await run([join(0), I(1), join(1), F(1), I(1, 1), F(1, 1)]);
    // Round 1 of room 1 has the same number as round 1 of room 0: the flags do not reset, and
    // the new round's settlements are taken for repeats.
    expect(row.misbookedCount).toBe(1);
    expect(row.lostCount).toBe(2);
  });

  it('loses a new round whose number happens to equal the previous room round', async () => {
    const row = await run([join(0), I(7), F(7), join(1), I(7, 1), F(7, 1)]);
    expect(row.lostCount).toBe(2);
    expect(row.moneyLost).toBe(107 + 207);
  });
});
