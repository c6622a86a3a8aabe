import { describe, expect, it } from 'vitest';
import type { StrategyRow } from './measure.js';
import { type DemoProgress, type DemoResult, runDemo } from './run-demo.js';
import { DEFAULT_SCENARIO } from './scenario.js';

const byId = (result: DemoResult, id: string): StrategyRow => {
  const row = result.rows.find((r) => r.id === id);
  if (row === undefined) throw new Error(`no row ${id}`);
  return row;
};

describe('runDemo at the default rates', () => {
  const progress: DemoProgress[] = [];
  const run = runDemo(DEFAULT_SCENARIO, (p) => progress.push(p));

  it('runs the six strategies over the same log, in report order', async () => {
    const result = await run;
    expect(result.rows.map((r) => r.id)).toEqual([
      'onceflow-c4',
      'onceflow-c3',
      'onceflow-c3-no-order',
      'sequence-guard',
      'per-type-flags',
      'no-dedup',
    ]);
    for (const row of result.rows) expect(row.delivered).toBe(result.scenario.settlementDeliveries);
    expect(progress.some((p) => p.phase === 'generating log')).toBe(true);
    expect(progress.at(-1)).toMatchObject({ phase: 'no dedup', done: result.scenario.deliveries });
  });

  it('onceflow at capacity 4: no loss, no doubling, no misbooking, no stale, every room exact', async () => {
    const result = await run;
    expect(result.requiredCapacity.capacity).toBe(4);
    expect(byId(result, 'onceflow-c4')).toMatchObject({
      applied: DEFAULT_SCENARIO.settlements,
      lostCount: 0,
      doubledCount: 0,
      misbookedCount: 0,
      roomsOff: 0,
      stale: 0,
    });
    expect(result.ok).toBe(true);
  });

  it('capacity 3 doubles money without orders and fails safe (stale, never doubled) with them', async () => {
    const result = await run;
    const noOrder = byId(result, 'onceflow-c3-no-order');
    const withOrder = byId(result, 'onceflow-c3');
    expect(noOrder.moneyDoubled).toBeGreaterThan(0);
    expect(withOrder.moneyDoubled).toBe(0);
    expect(withOrder.stale).toBeGreaterThan(0);
    expect(withOrder.lostCount).toBe(0);
    // Every repeat the window forgot: doubled without the horizon, stale with it.
    expect(withOrder.stale).toBeLessThanOrEqual(noOrder.doubledCount);
  });

  it('shows each naive strategy failing its own way', async () => {
    const result = await run;
    const guard = byId(result, 'sequence-guard');
    expect(guard.moneyLost).toBeGreaterThan(0);
    expect(guard.moneyDoubled).toBeGreaterThan(0);
    expect(guard.moneyMisbooked).toBeGreaterThan(0);
    const flags = byId(result, 'per-type-flags');
    expect(flags.moneyDoubled).toBeGreaterThan(0);
    expect(flags.moneyMisbooked).toBeGreaterThan(0);
    const none = byId(result, 'no-dedup');
    expect(none.doubledCount).toBe(result.scenario.settlementDeliveries - DEFAULT_SCENARIO.settlements);
    expect(none.misbookedCount).toBe(0);
    expect(none.lostCount).toBe(0);
  });
});

describe('runDemo with --overlap 2', () => {
  it('needs capacity 5; the capacity-4 window goes stale instead of doubling and loses nothing', async () => {
    const result = await runDemo({ ...DEFAULT_SCENARIO, settlements: 60_000, overlap: 2 });
    expect(result.requiredCapacity.capacity).toBe(5);
    const c4 = byId(result, 'onceflow-c4');
    expect(c4.stale).toBeGreaterThan(0);
    expect(c4).toMatchObject({
      doubledCount: 0,
      lostCount: 0,
      staleOnlyLost: 0,
      misbookedCount: 0,
      roomsOff: 0,
    });
    expect(result.ok).toBe(true);
  });
});
