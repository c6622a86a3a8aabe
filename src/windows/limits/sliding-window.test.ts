import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/clock.js';
import type { Duration } from '../../core/duration.js';
import { createLimiter } from '../../limiter/limiter.js';
import { memoryStore } from '../../store/memory/memory-store.js';

/**
 * A sliding-window limiter of 10 per 1 s on a fake clock, and `burst(t)`: at time t, how many
 * requests of cost 1 in a row are admitted (the first refusal ends the burst; a refusal charges
 * nothing). The burst is floor(limit − estimate): each admission adds exactly 1 to the estimate.
 */
function fixture(granularity: Duration) {
  const clock = new FakeClock(0);
  const limiter = createLimiter({
    store: memoryStore({ clock }),
    clock,
    algorithm: 'sliding-window',
    limit: 10,
    window: '1s',
    granularity,
    blockCache: false, // the algorithm's answers, not the cache's
  });
  return {
    limiter,
    clock,
    async burst(t: number): Promise<number> {
      clock.set(t);
      let admitted = 0;
      while ((await limiter.take('k')).allowed) admitted++;
      return admitted;
    },
  };
}

describe('sliding-window estimate', () => {
  it('granularity = window (2 counters): the classic prev x (1 − elapsed/window) + current', async () => {
    const { limiter, burst } = fixture('1s');
    expect((await limiter.take('k', { cost: 8 })).allowed).toBe(true); // t = 0, window [0, 1000): 8
    // Window [1000, 2000), prev = 8:
    expect(await burst(1250)).toBe(4); // 8 x (1 − 250/1000) + 0 = 6: room for 4 (6 + 4 = 10)
    expect(await burst(1500)).toBe(2); // 8 x 0.5 + 4 = 8: room for 2
    expect(await burst(1900)).toBe(3); // 8 x 0.1 + 6 = 6.8: room for 3 (9.8; a 4th makes 10.8)
    // Window [2000, 3000), prev = 4 + 2 + 3 = 9:
    expect(await burst(2300)).toBe(3); // 9 x 0.7 + 0 = 6.3: room for 3
    expect(await burst(2999)).toBe(6); // 9 x 0.001 + 3 = 3.009: room for 6 (9.009)
    // Window [3000, 4000), prev = 9:
    expect(await burst(3000)).toBe(1); // 9 x 1 + 0 = 9: the previous window counts in full at its end
    // Two windows later the previous window is empty: the whole limit again.
    expect(await burst(5000)).toBe(10); // 0 x 1 + 0 = 0
  });

  it('remaining and retryAfterMs follow the same estimate (classic form)', async () => {
    const { limiter, clock, burst } = fixture('1s');
    await limiter.take('k', { cost: 8 }); // t = 0
    expect(await burst(999)).toBe(2); // window [0, 1000) full at 10
    clock.set(1300);
    // At 1300 prev = 10: 10 x 0.7 = 7. A cost of 4 does not fit (11), 3 does (remaining 0).
    expect(await limiter.take('k', { cost: 4 })).toMatchObject({ allowed: false, remaining: 3 });
    expect(await limiter.take('k', { cost: 3 })).toMatchObject({ allowed: true, remaining: 0 });
    // Cost 2 fits once 10 x (1 − e/1000) + 3 <= 8, i.e. e >= 500: at 1500, 200 ms after 1300.
    expect(await limiter.take('k', { cost: 2 })).toMatchObject({ allowed: false, retryAfterMs: 200 });
  });

  it('granularity = window / 2 (3 counters): the two newest halves in full, the oldest weighted', async () => {
    const { limiter, burst } = fixture('500ms');
    expect((await limiter.take('k', { cost: 6 })).allowed).toBe(true); // t = 0: bucket [0, 500) = 6
    // At t, buckets a (oldest, partly in the window), b, c (current, r = t mod 500):
    // estimate = a x (500 − r)/500 + b + c.
    expect(await burst(600)).toBe(4); // a = 0 (before 0), b = 6, c = 0: 6, room for 4; c = 4
    expect(await burst(1100)).toBe(1); // 6 x 400/500 + 4 + 0 = 8.8: room for 1; c = 1
    expect(await burst(1400)).toBe(3); // 6 x 100/500 + 4 + 1 = 6.2: room for 3; c = 4
    expect(await burst(1600)).toBe(2); // 4 x 400/500 + 4 + 0 = 7.2: room for 2
  });
});
