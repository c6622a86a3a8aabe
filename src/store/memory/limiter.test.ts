import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/clock.js';
import { createLimiter } from '../../limiter/limiter.js';
import { toSpec } from '../../limiter/options.js';
import { MATH } from '../../windows/limits/algorithms.js';
import { STATE_SLACK_MS } from '../../windows/limits/time.js';
import type { Algorithm, LimitSpec, LimitVerdict } from '../../windows/limits/types.js';
import type { LimitCall } from '../limiter.js';
import { MemoryLimiterBackend } from './limiter.js';
import { memoryStore } from './memory-store.js';

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

const WINDOW_MS = 1000;
const spec = (algorithm: Algorithm, limit = 5): LimitSpec =>
  toSpec(
    { algorithm, limit, window: WINDOW_MS, ...(algorithm === 'sliding-window' ? { granularity: 100 } : {}) },
    '',
  );
const callOf = (s: LimitSpec, subject: string): LimitCall => ({ spec: s, subject });
const namespace = '|t:test';

describe('memory limiter state stays proportional to the keys live within a window', () => {
  // Keys charged within one window plus the slack are what a sweep must keep: for a fixed window
  // of 1 s on the store's clock, a state stays until its window's end + 1 s (time.ts). At any
  // sweep the live keys are those of the current window, the previous one (within the slack) and
  // at most the one before (a window's end + 1 s is the next window's end): 3 windows' worth.
  // The bound holds per window, so 20 windows of 10,000 new keys (the fixed window) show what any
  // larger count would: 3 windows' worth (30,000) is far above the sweep's floor (SWEEP_MIN, 1024),
  // so it is the live keys, not the floor, that the bound is checked against. The sweep is the
  // same code for every algorithm (only a state's expiry differs), so the others run half as many.
  for (const [algorithm, keys] of [
    ['fixed-window', 200_000],
    ['gcra', 100_000],
    ['sliding-window', 100_000],
    ['sliding-log', 100_000],
  ] as const) {
    it(`${algorithm}: ${keys.toLocaleString('en')} new keys over 20 windows stay within 2 x the live keys`, () => {
      const perWindow = keys / 20;
      const clock = new FakeClock(0);
      const backend = new MemoryLimiterBackend(clock);
      const s = spec(algorithm);
      let max = 0;
      for (let i = 0; i < keys; i++) {
        if (i % (perWindow / 100) === 0) clock.set(Math.floor((i / perWindow) * WINDOW_MS));
        backend.take({ namespace, limits: [callOf(s, `new-${i}`)], cost: 1 });
        if (backend.size > max) max = backend.size;
        if ((i & 1023) === 0) expect(backend.size).toBeLessThanOrEqual(backend.sweepBound);
      }
      expect(max).toBeLessThanOrEqual(2 * 3 * perWindow);
      expect(max).toBeGreaterThan(perWindow); // the states are really kept while they count
    });
  }

  it('a few hot keys among a stream of new ones (multi-limit takes): within the stated bound', () => {
    const clock = new FakeClock(0);
    const backend = new MemoryLimiterBackend(clock);
    const specs = [spec('gcra', 1000), spec('fixed-window', 1000)];
    const hot = Array.from({ length: 10 }, (_, i) => specs.map((s) => callOf(s, `hot-${i}`)));
    let max = 0;
    // 20 windows of 2,500 takes, 2,000 of them new keys (4,000 states: 2 limits each), so that
    // 3 windows' worth stays far above the sweep's floor (SWEEP_MIN, 1024).
    for (let i = 0; i < 50_000; i++) {
      if (i % 25 === 0) clock.advance(10); // 2,500 takes per window: 2,000 of new keys
      const calls = i % 5 === 0 ? (hot[i % 10] as LimitCall[]) : specs.map((s) => callOf(s, `new-${i}`));
      backend.take({ namespace, limits: calls, cost: 1 });
      if (backend.size > max) max = backend.size;
      if ((i & 255) === 0) expect(backend.size).toBeLessThanOrEqual(backend.sweepBound + specs.length - 1);
    }
    // 2,000 new keys x 2 limits per window, 3 windows live: twice that, at most.
    expect(max).toBeLessThanOrEqual(2 * 3 * 2_000 * 2 + 1);
    expect(max).toBeGreaterThan(2_000 * 2); // the states are really kept while they count
    // The hot keys were kept through every sweep.
    expect(
      backend.take({ namespace, limits: hot[0] as LimitCall[], cost: 0 }).verdicts[0]?.remaining,
    ).toBeLessThan(1000);
  });

  it('the sweep never drops a state that still counts: decisions equal a model that never sweeps', () => {
    const algorithms = ['fixed-window', 'gcra', 'sliding-window', 'sliding-log'] as const;
    fc.assert(
      fc.property(
        fc.constantFrom(...algorithms),
        fc.array(
          fc.record({
            // A few hot keys and many cold ones, so passes run among live and dead states.
            key: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 4, max: 400 })),
            // Forward by up to two windows, or back by up to the slack (a clock that steps back).
            dt: fc.oneof(
              fc.integer({ min: 0, max: 2 * WINDOW_MS }),
              fc.integer({ min: -STATE_SLACK_MS, max: 0 }),
            ),
            cost: fc.integer({ min: 0, max: 3 }),
          }),
          { maxLength: 400 },
        ),
        (algorithm, steps) => {
          const s = spec(algorithm, 3);
          const math = MATH[algorithm];
          const clock = new FakeClock(100_000);
          // A sweep as often as every 4 takes (the bound's minimum is 1024 in use).
          const backend = new MemoryLimiterBackend(clock, undefined, 4);
          const model = new Map<string, { state: unknown; expiresAt: number }>();
          const calls = new Map<string, LimitCall>();
          let newest = clock.now();
          for (const step of steps) {
            // Never more than the slack behind the newest time seen: that much a sweep allows for.
            const t = Math.max(newest - STATE_SLACK_MS, clock.now() + step.dt);
            clock.set(t);
            newest = Math.max(newest, t);
            const key = `k${step.key}`;
            let call = calls.get(key);
            if (call === undefined) calls.set(key, (call = callOf(s, key)));
            const got = backend.take({ namespace, limits: [call], cost: step.cost })
              .verdicts[0] as LimitVerdict;
            const held = model.get(key);
            const live = held !== undefined && held.expiresAt > t ? held.state : undefined;
            const want = math.decide(s, live, t, step.cost);
            if (want.allowed && step.cost > 0) {
              const state = math.commit(s, live, t, step.cost);
              model.set(key, { state, expiresAt: math.expiresAt(s, state) });
            }
            expect([got.allowed, got.remaining, got.resetAt, got.retryAfterMs]).toEqual([
              want.allowed,
              want.remaining,
              want.resetAt,
              want.retryAfterMs,
            ]);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
