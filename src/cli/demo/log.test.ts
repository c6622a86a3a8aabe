import { describe, expect, it } from 'vitest';
import { generateLog } from './log.js';
import { DEFAULT_DEMO } from './options.js';
import { requiredCapacityOf } from './required-capacity.js';

describe('generateLog', () => {
  // Large enough that every fault occurs (late replays, two rounds open at once with overlap 2),
  // small enough to generate in milliseconds.
  const config = { ...DEFAULT_DEMO, settlements: 4_000, players: 40 };

  it('is deterministic for a seed, and every settlement is delivered at least once', () => {
    const a = generateLog(config);
    expect(generateLog(config)).toEqual(a);
    expect(generateLog({ ...config, seed: 2 })).not.toEqual(a);
    const seen = new Set(a.deliveries.flatMap((d) => (d.settlement ? [d.settlement.id] : [])));
    expect(seen.size).toBe(4_000);
    expect(a.stats.settlementDeliveries).toBe(a.deliveries.filter((d) => d.settlement).length);
  });

  it('arrivals only move forward; a late replay comes at least 5 minutes after the first delivery', () => {
    const log = generateLog(config);
    const first = new Map<number, number>();
    let previous = -1;
    let late = 0;
    // Collected, then asserted once: an expect per delivery costs more than the generation.
    const backwards: number[] = [];
    const early: number[] = [];
    log.deliveries.forEach((d, i) => {
      if (d.at < previous) backwards.push(i);
      previous = d.at;
      if (!d.settlement) return;
      if (!first.has(d.settlement.id)) first.set(d.settlement.id, d.at);
      if (d.lateReplay) {
        late++;
        if (d.at - (first.get(d.settlement.id) as number) < 5 * 60_000) early.push(i);
      }
    });
    expect(backwards).toEqual([]);
    expect(early).toEqual([]);
    expect(late).toBe(log.stats.lateReplayed);
    expect(late).toBeGreaterThan(0);
  });

  it('keeps the delivery bound with overlap 1 (capacity 4 suffices) and breaks it with overlap 2', () => {
    expect(requiredCapacityOf(generateLog(config)).capacity).toBeLessThanOrEqual(4);
    expect(requiredCapacityOf(generateLog({ ...config, overlap: 2 })).capacity).toBe(5);
  });
});
