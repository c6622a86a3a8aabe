// The Postgres limiter against the memory model: the same generated sequences (several keys,
// single and multi-limit, every algorithm), one fake clock passed to both (the time in each
// command), and every decision must be identical, field by field.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createLimiter, type Decision, FakeClock, type LimitOptions, memoryStore } from '../../src/index.js';
import { createPostgresStore } from '../../src/postgres/index.js';
import type { LimitCall } from '../../src/store/limiter.js';
import type { Store } from '../../src/store/store.js';
import type { LimitSpec } from '../../src/windows/limits/types.js';
import { limitSets, type Step, steps, WINDOW } from '../property/limiter-sequences.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';

const view = (d: Decision) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  resetAt: d.resetAt,
  retryAfterMs: d.retryAfterMs,
  reason: d.reason,
  bound: d.bound,
  at: d.at,
  limits: d.limits,
});

describe('limiter on PostgreSQL = memory model', () => {
  const pool = testPool(4);
  const schema = runSchema('lim_model');
  const store = createPostgresStore({ pool, schema });
  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });
  let run = 0;

  /** Runs `seq` on a memory and a Postgres limiter driven by one fake clock; every decision must be equal. */
  async function sameDecisions(limits: LimitOptions[], seq: Step[], costScale = 1, start = 1_000_000) {
    const clock = new FakeClock(start);
    const name = `run-${run++}`;
    const memory = createLimiter({ store: memoryStore({ clock }), clock, limits, name, blockCache: false });
    const pg = createLimiter({ store, clock, limits, name, blockCache: false, timeout: '5s' });
    for (const s of seq) {
      clock.set(clock.now() + s.advance);
      const cost = s.cost * costScale;
      const [m, p] = await Promise.all([memory.take(s.key, { cost }), pg.take(s.key, { cost })]);
      expect(view(p)).toEqual(view(m));
    }
  }

  it('gives identical decisions for the same sequence and clock (clock rollbacks too)', async () => {
    await fc.assert(
      fc.asyncProperty(limitSets, steps(['a', 'b:c', '{x}'], true), (limits, seq) =>
        sameDecisions(limits, seq),
      ),
      { numRuns: 60 },
    );
  });

  it('clocks far from today match the model too: near 0, past 1e14 ms, near 2^52', async () => {
    await fc.assert(
      fc.asyncProperty(
        limitSets,
        steps(['a', 'b'], true),
        fc.constantFrom(50_000, 100_000_000_000_007, 2 ** 50, 2 ** 52 - 10_000_000),
        (limits, seq, start) => sameDecisions(limits, seq, 1, start),
      ),
      { numRuns: 30 },
    );
  });

  it("a sliding log matches the model at every entry's own window edge", async () => {
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
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.array(step, { minLength: 1, maxLength: 60 }),
        (limit, seq) => sameDecisions([{ algorithm: 'sliding-log', limit, window: WINDOW }], seq),
      ),
      { numRuns: 80 },
    );
  });

  it('large limits and costs (sliding log above 512 entries, scaled costs) match the model', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('sliding-log', 'gcra', 'sliding-window', 'fixed-window') as fc.Arbitrary<
          LimitOptions['algorithm']
        >,
        fc.integer({ min: 513, max: 700 }),
        steps(['a', 'b'], true),
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
      { numRuns: 30 },
    );
  });

  it('store replies equal the memory store for multi-limit commands at and around window edges', async () => {
    // Straight at the Store contract (no limiter in between): explicit `now`, specs built by
    // hand, costs up to 2^53 - 1 (a cost no limit admits must not overflow the SQL math).
    const specs: LimitSpec[] = [
      { id: 'f', algorithm: 'fixed-window', limit: 5, windowMs: 1000, param: 0 },
      { id: 'w', algorithm: 'sliding-window', limit: 7, windowMs: 1000, param: 250 },
      { id: 'g', algorithm: 'gcra', limit: 3, windowMs: 1000, param: 4 },
      { id: 'd', algorithm: 'sliding-log', limit: 6, windowMs: 1000, param: 0 },
    ];
    const edge = fc.constantFrom(0, 1, 249, 250, 251, 999, 1000, 1001, -1, -250);
    const cmd = fc.record({
      advance: fc.oneof(edge, fc.integer({ min: 0, max: 2000 })),
      cost: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constant(Number.MAX_SAFE_INTEGER)),
      pick: fc.subarray([0, 1, 2, 3], { minLength: 1 }),
      subject: fc.constantFrom('s', 't'),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 40 }), async (seq) => {
        const memory = memoryStore({ clock: new FakeClock(0) });
        const memoryTake = memory.limiterTake?.bind(memory) as NonNullable<Store['limiterTake']>;
        const namespace = `|l:direct-${run++}`;
        let now = 10_000_000;
        for (const c of seq) {
          now += c.advance;
          const calls = (): LimitCall[] =>
            c.pick.map((i) => {
              const spec = specs[i] as LimitSpec;
              return { spec, subject: c.subject };
            });
          const command = { namespace, cost: c.cost, now };
          const m = await memoryTake({ ...command, limits: calls() });
          const p = await store.limiterTake({ ...command, limits: calls() });
          expect(p).toEqual(m);
        }
      }),
      { numRuns: 60 },
    );
  });
});
