import { describe, expect, it } from 'vitest';
import { F, handLog, I, join } from './hand-log.js';
import { onceflowStrategy, SETTLEMENT_CAPACITY, TOO_SMALL_CAPACITY } from './onceflow-strategy.js';
import { requiredCapacityOf } from './required-capacity.js';
import { evaluateStrategy } from './run-demo.js';

const c = (capacity: number, withOrder: boolean) => (log: ReturnType<typeof handLog>) =>
  onceflowStrategy(log, { capacity, withOrder });

describe('onceflow strategy', () => {
  it('runs with the derived capacity 4 and a deliberately too small 3', () => {
    expect(SETTLEMENT_CAPACITY).toBe(4);
    expect(TOO_SMALL_CAPACITY).toBe(SETTLEMENT_CAPACITY - 1);
  });

  // Every fault the naive strategies fail on, inside the delivery bound: a repeat of the current
  // round, a late final after a move, a room with a lower counter, a replay of rounds r-1 and r.
  const bounded = handLog([
    join(0),
    I(900),
    F(900),
    I(900),
    I(901),
    join(1),
    F(901),
    I(5, 1),
    F(5, 1),
    I(901),
    F(901),
    I(5, 1),
    F(5, 1),
    I(6, 1),
    F(6, 1),
  ]);

  it('applies every settlement exactly once under its own room at capacity 4, joins or not', async () => {
    expect(requiredCapacityOf(bounded).capacity).toBeLessThanOrEqual(SETTLEMENT_CAPACITY);
    const row = await evaluateStrategy(bounded, c(SETTLEMENT_CAPACITY, true));
    expect(row).toMatchObject({ applied: 8, lostCount: 0, doubledCount: 0, misbookedCount: 0, roomsOff: 0 });
    expect(row.blocked).toBe(5);
  });

  // I1 F1 I2 F2, then I1 again: 3 others were first seen in between, so capacity 4 is needed.
  const tight = handLog([join(0), I(1), F(1), I(2), F(2), I(1)]);

  it('doubles at capacity 3 without orders: the bound is tight', async () => {
    expect(requiredCapacityOf(tight).capacity).toBe(4);
    const row = await evaluateStrategy(tight, c(TOO_SMALL_CAPACITY, false));
    expect(row.doubledCount).toBe(1);
    expect(row.moneyDoubled).toBe(101);
  });

  it('answers stale at capacity 3 with orders: a too-small window fails safe', async () => {
    const row = await evaluateStrategy(tight, c(TOO_SMALL_CAPACITY, true));
    expect(row).toMatchObject({ stale: 1, doubledCount: 0, lostCount: 0, staleOnlyLost: 0 });
  });

  it('with (a) relaxed needs 5: capacity 4 with orders goes stale, without orders doubles', async () => {
    // F1 lands after I2, F2 after I3: I2's repeat comes after F1, I3, F2, F3 were first seen.
    const relaxed = handLog([join(0), I(1), I(2), F(1), I(3), F(2), F(3), I(2)]);
    expect(requiredCapacityOf(relaxed).capacity).toBe(5);
    const safe = await evaluateStrategy(relaxed, c(SETTLEMENT_CAPACITY, true));
    expect(safe).toMatchObject({ stale: 1, doubledCount: 0, lostCount: 0 });
    const unsafe = await evaluateStrategy(relaxed, c(SETTLEMENT_CAPACITY, false));
    expect(unsafe.doubledCount).toBe(1);
    const enough = await evaluateStrategy(relaxed, c(5, false));
    expect(enough).toMatchObject({ stale: 0, doubledCount: 0, lostCount: 0 });
  });

  it('counts a first delivery that arrives below the horizon as stale-only lost money', async () => {
    // F1 is created before I2..I4 but first delivered after they pushed the window past it.
    const starved = handLog([join(0), I(1), I(2), I(3), I(4), F(1)]);
    const row = await evaluateStrategy(starved, c(2, true));
    expect(row).toMatchObject({ stale: 1, lostCount: 1, staleOnlyLost: 1, moneyLost: 201, doubledCount: 0 });
  });
});
