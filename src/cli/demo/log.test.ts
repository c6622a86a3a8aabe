import { describe, expect, it } from 'vitest';
import { generateLog } from './log.js';
import { DEFAULT_DEMO } from './options.js';
import { requiredCapacityOf } from './required-capacity.js';

describe('generateLog', () => {
  const config = { ...DEFAULT_DEMO, settlements: 20_000, players: 200 };

  it('is deterministic for a seed, and every settlement is delivered at least once', () => {
    const a = generateLog(config);
    expect(generateLog(config)).toEqual(a);
    expect(generateLog({ ...config, seed: 2 })).not.toEqual(a);
    const seen = new Set(a.deliveries.flatMap((d) => (d.settlement ? [d.settlement.id] : [])));
    expect(seen.size).toBe(20_000);
    expect(a.stats.settlementDeliveries).toBe(a.deliveries.filter((d) => d.settlement).length);
  });

  it('arrivals only move forward; a late replay comes at least 5 minutes after the first delivery', () => {
    const log = generateLog(config);
    const first = new Map<number, number>();
    let previous = -1;
    let late = 0;
    // Counted over the whole log and asserted once: an expect per delivery costs more than the log.
    let backwards = 0;
    let early = 0;
    for (const d of log.deliveries) {
      if (d.at < previous) backwards++;
      previous = d.at;
      if (!d.settlement) continue;
      if (!first.has(d.settlement.id)) first.set(d.settlement.id, d.at);
      if (d.lateReplay) {
        late++;
        if (d.at - (first.get(d.settlement.id) as number) < 5 * 60_000) early++;
      }
    }
    expect({ backwards, early }).toEqual({ backwards: 0, early: 0 });
    expect(late).toBe(log.stats.lateReplayed);
    expect(late).toBeGreaterThan(0);
  });

  it('keeps the delivery bound with overlap 1 (capacity 4 suffices) and breaks it with overlap 2', () => {
    expect(requiredCapacityOf(generateLog(config)).capacity).toBeLessThanOrEqual(4);
    expect(requiredCapacityOf(generateLog({ ...config, settlements: 60_000, overlap: 2 })).capacity).toBe(5);
  });
});
