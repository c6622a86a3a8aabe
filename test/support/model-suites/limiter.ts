// The limiter on a store against the memory model: the same generated sequences (several keys,
// single and multi-limit, every algorithm), one fake clock passed to both (the time in each
// command), and every decision must be identical, field by field.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  type Decision,
  FakeClock,
  type LimitOptions,
  memoryStore,
} from '../../../src/index.js';
import { limitSets, type Step, steps, WINDOW } from '../../property/limiter-sequences.js';
import { runsFor, type StoreTarget } from './target.js';

/** A decision without its functions: what two stores must agree on. */
export const view = (d: Decision) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  resetAt: d.resetAt,
  retryAfterMs: d.retryAfterMs,
  reason: d.reason,
  bound: d.bound,
  at: d.at,
  limits: d.limits,
});

export function limiterModelSuite(target: StoreTarget, extra?: () => void): void {
  describe(`limiter on ${target.label} = memory model`, () => {
    let run = 0;

    /** A memory and a store limiter of `limits` under one name, both on `clock`. */
    const pair = (limits: LimitOptions[], name: string, clock: FakeClock) => {
      const options = { clock, limits, name, blockCache: false, timeout: '5s' } as const;
      return {
        memory: createLimiter({ store: memoryStore({ clock }), ...options }),
        real: createLimiter({ store: target.store(), ...options }),
      };
    };

    /** Runs `seq` on a memory and a store limiter driven by one fake clock; every decision must be equal. */
    async function sameDecisions(limits: LimitOptions[], seq: Step[], costScale = 1, start = 1_000_000) {
      const clock = new FakeClock(start);
      const name = `run-${run++}`;
      const { memory, real } = pair(limits, name, clock);
      for (const s of seq) {
        clock.set(clock.now() + s.advance);
        const cost = s.cost * costScale;
        const [m, r] = await Promise.all([memory.take(s.key, { cost }), real.take(s.key, { cost })]);
        expect(view(r)).toEqual(view(m));
      }
    }

    it('gives identical decisions for the same sequence and clock (clock rollbacks too)', () =>
      fc.assert(
        fc.asyncProperty(limitSets, steps(['a', 'b:c', '{x}'], true), (limits, seq) =>
          sameDecisions(limits, seq),
        ),
        { numRuns: runsFor(target, 60) },
      ));

    it('clocks far from today match the model too: near 0, past 1e14 ms (a store writes every number whole), near 2^52', () =>
      fc.assert(
        fc.asyncProperty(
          limitSets,
          steps(['a', 'b'], true),
          // 40 steps back of at most a window each stay above 0 from 50 000.
          fc.constantFrom(50_000, 100_000_000_000_007, 2 ** 50, 2 ** 52 - 10_000_000),
          (limits, seq, start) => sameDecisions(limits, seq, 1, start),
        ),
        { numRuns: runsFor(target, 30) },
      ));

    it('a time outside [0, 2^52) is a typed error on both stores, and changes nothing', async () => {
      for (const algorithm of ['sliding-log', 'gcra'] as const) {
        const clock = new FakeClock(1_000);
        const name = `range-${run++}`;
        // 600: above 512, where a sliding log is a sorted set on Redis, its scores at 2^52 + value.
        const limits: LimitOptions[] = [{ algorithm, limit: 600, window: 1000 }];
        const both = [
          createLimiter({ store: memoryStore({ clock }), clock, limits, name, blockCache: false }),
          createLimiter({ store: target.store(), clock, limits, name, blockCache: false }),
        ];
        for (const limiter of both) await limiter.take('k', { cost: 5 });
        for (const bad of [-1, 2 ** 52, 2 ** 52 + 5000]) {
          clock.set(bad);
          for (const limiter of both) {
            await expect(limiter.take('k', { cost: 1 })).rejects.toMatchObject({
              code: 'ERR_INVALID_ARGUMENT',
            });
          }
        }
        clock.set(1_001);
        const [m, r] = await Promise.all(both.map((l) => l.take('k', { cost: 0 })));
        expect(m?.remaining).toBe(595);
        expect(view(r as Decision)).toEqual(view(m as Decision));
      }
    });

    it("a sliding log matches the model at every entry's own window edge", () => {
      // Several entries live at once, the clock stepping by a few ms and by W - 2 .. W + 1, lands
      // on the edge of each entry in turn (drops of one entry, of several, of all; refusals that
      // need several entries freed). On Redis a log of up to 512 is a string of deltas.
      const near = fc.constantFrom(0, 1, 2, 3, WINDOW - 2, WINDOW - 1, WINDOW, WINDOW + 1);
      const step = fc.record({
        advance: fc.oneof(
          { arbitrary: near, weight: 4 },
          { arbitrary: fc.integer({ min: 0, max: WINDOW }), weight: 1 },
        ),
        cost: fc.oneof(
          { arbitrary: fc.constant(1), weight: 3 },
          { arbitrary: fc.integer({ min: 0, max: 4 }), weight: 1 },
        ),
        key: fc.constant('k'),
      });
      return fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 8 }),
          fc.array(step, { minLength: 1, maxLength: 60 }),
          (limit, seq) => sameDecisions([{ algorithm: 'sliding-log', limit, window: WINDOW }], seq),
        ),
        { numRuns: runsFor(target, 100) },
      );
    });

    it('large limits and costs (a sliding log above 512 entries: a sorted set on Redis; scaled costs) match the model', () =>
      fc.assert(
        fc.asyncProperty(
          fc.constantFrom('sliding-log', 'gcra', 'sliding-window', 'fixed-window') as fc.Arbitrary<
            LimitOptions['algorithm']
          >,
          fc.integer({ min: 513, max: 700 }),
          steps(['a', 'b'], true),
          // Costs scaled up so that a few requests fill the limit and refusals happen.
          fc.integer({ min: 40, max: 120 }),
          (algorithm, limit, seq, scale) =>
            sameDecisions(
              [
                algorithm === 'sliding-window'
                  ? { algorithm, limit, window: 1000, granularity: 100 }
                  : { algorithm, limit, window: 1000 },
              ],
              seq,
              scale,
            ),
        ),
        { numRuns: runsFor(target, 30) },
      ));

    const concurrentCalls = Array.from({ length: 300 }, (_, i) => ({ key: `k${i % 7}`, cost: (i % 5) + 1 }));
    if (target.inCallOrder === false) {
      // Concurrent takes race (no call order is promised): what holds in any order, at one
      // instant, per key: the admitted costs fit the limit, and every refused take's cost exceeds
      // what was left at the end (what is left only shrinks, so it exceeded it when refused).
      it('concurrent decisions (racing): admitted costs fit the limit, and each refusal was due', async () => {
        const clock = new FakeClock(5_000_000);
        const { real } = pair(
          [{ algorithm: 'sliding-log', limit: 50, window: '1s' }],
          `race-${run++}`,
          clock,
        );
        const got = await Promise.all(concurrentCalls.map((c) => real.take(c.key, { cost: c.cost })));
        const admitted = new Map<string, number>();
        for (const [i, c] of concurrentCalls.entries())
          if ((got[i] as Decision).allowed) admitted.set(c.key, (admitted.get(c.key) ?? 0) + c.cost);
        for (const [i, c] of concurrentCalls.entries()) {
          const used = admitted.get(c.key) ?? 0;
          expect(used).toBeLessThanOrEqual(50);
          if (!(got[i] as Decision).allowed) expect(c.cost).toBeGreaterThan(50 - used);
        }
      });
    } else {
      it('concurrent decisions (batched where the store batches) come out in call order', async () => {
        const clock = new FakeClock(5_000_000);
        const limits: LimitOptions[] = [{ algorithm: 'sliding-log', limit: 50, window: '1s' }];
        const { memory, real } = pair(limits, `batch-${run++}`, clock);
        const got = await Promise.all(concurrentCalls.map((c) => real.take(c.key, { cost: c.cost })));
        for (const [i, c] of concurrentCalls.entries())
          expect(view(got[i] as Decision)).toEqual(view(await memory.take(c.key, { cost: c.cost })));
      });
    }

    extra?.();
  });
}
