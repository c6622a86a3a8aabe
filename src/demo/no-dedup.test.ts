import { describe, expect, it } from 'vitest';
import { F, handLog, I, join } from './hand-log.js';
import { noDedupStrategy } from './no-dedup.js';
import { evaluateStrategy } from './run-demo.js';

describe('no dedup', () => {
  it('applies every repeat, under the settlement own room: doubles, never loses or misbooks', async () => {
    const log = handLog([join(0), I(1), F(1), I(1), join(1), F(1), I(2, 1), F(2, 1), F(2, 1)]);
    const row = await evaluateStrategy(log, noDedupStrategy);
    expect(row).toMatchObject({ applied: 7, blocked: 0, lostCount: 0, misbookedCount: 0 });
    expect(row.doubledCount).toBe(3);
    expect(row.moneyDoubled).toBe(101 + 201 + 202);
    expect(row.roomsOff).toBe(2);
  });
});
