import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createStallMeter } from './stall-meter.js';

function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy: the event loop runs nothing else
  }
}

describe('stall meter', () => {
  afterEach(() => vi.useRealTimers());

  it('reports a real 300 ms block as at least 250 ms stalled, at once and after its timer ran', async () => {
    const meter = createStallMeter(); // 50 ms resolution: a stall is counted short by at most 50 ms
    try {
      await sleep(60); // a tick has run: the next one is due at most 50 ms from now
      const before = meter.stalledMs();
      block(300);
      // Same task as the block: the overdue tick is counted already (only lower bounds: a loaded
      // machine stalls more, never less).
      expect(meter.stalledMs() - before).toBeGreaterThanOrEqual(250);
      await sleep(60);
      expect(meter.stalledMs() - before).toBeGreaterThanOrEqual(250);
    } finally {
      meter.stop();
    }
  });

  it('sums the lateness of its ticks, counts the overdue one at reading, and never goes back', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let t = 1000;
    const meter = createStallMeter({ resolution: '10ms', now: () => t });
    const readings: number[] = [];
    const step = (ms: number) => {
      t += ms;
      readings.push(meter.stalledMs());
    };
    t += 10;
    vi.advanceTimersByTime(10); // on time
    expect(meter.stalledMs()).toBe(0);
    step(500); // blocked: the tick due at +10 has not run
    expect(meter.stalledMs()).toBe(490);
    vi.advanceTimersByTime(10); // it runs now, 490 ms late
    expect(meter.stalledMs()).toBe(490);
    step(5); // not yet due
    expect(meter.stalledMs()).toBe(490);
    step(25);
    expect(meter.stalledMs()).toBe(510);
    for (let i = 1; i < readings.length; i++)
      expect(readings[i]).toBeGreaterThanOrEqual(readings[i - 1] as number);
    meter.stop();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('refuses bad options by name', () => {
    for (const [options, option] of [
      [{ resolutoin: '10ms' }, 'resolutoin'],
      [{ resolution: 0 }, 'resolution'],
      [{ resolution: 2 ** 31 }, 'resolution'],
      [{ now: 'performance' }, 'now'],
    ] as const) {
      expect(() => createStallMeter(options as never)).toThrow(expect.objectContaining({ option }));
    }
  });
});
