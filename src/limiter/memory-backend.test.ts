import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { memoryStore } from '../store/memory-store.js';
import { createLimiter } from './limiter.js';

// A full GC on demand (the test runner does not start Node with --expose-gc).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const heapAfterGc = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

describe('memory limiter state', () => {
  it('is freed once swept, though the limiter still remembers the keys it saw (and their entries)', async () => {
    const clock = new FakeClock(0);
    const store = memoryStore({ clock });
    const limiter = createLimiter({
      store,
      clock,
      algorithm: 'sliding-window',
      limit: 100_000,
      window: '1h',
      granularity: '1s', // 3 600 buckets per key: ~30 KB of state each
      blockCache: false,
    });
    const before = heapAfterGc();
    for (let i = 0; i < 2_000; i++) await limiter.take(`user-${i}`);
    const full = heapAfterGc();
    expect(full - before).toBeGreaterThan(30_000_000); // the state is really there (~60 MB)
    // Two windows later every key has expired; other takes drive the sweep past all of them.
    clock.advance(2 * 3_600_000);
    for (let i = 0; i < 3_000; i++) await limiter.take('other');
    const swept = heapAfterGc();
    expect(swept - before).toBeLessThan((full - before) / 5);
    // Used after the measure: the limiter (and its key cache) must be alive while it is taken.
    expect((await limiter.take('user-1')).allowed).toBe(true);
  });
});
