// Properties of the memory limiter (the reference model), with a fake clock on window edges:
// exact algorithms never admit more than they may in any window (brute force over the admitted
// times), the sliding window stays within its documented error bound, a refusal changes no state,
// and retryAfterMs is exact (one millisecond earlier is refused, at it the request passes).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Algorithm, createLimiter, FakeClock, type LimitOptions, memoryStore } from '../../src/index.js';
import { inProcessSpy } from '../support/in-process.js';
import { ALGORITHMS, GRANULARITY, limitOf, steps, WINDOW } from './limiter-sequences.js';

type Admitted = { t: number; cost: number }[];

function newLimiter(limits: LimitOptions[], clock: FakeClock) {
  return createLimiter({ store: memoryStore({ clock }), clock, limits, blockCache: false });
}

/** Replays `history` into a fresh limiter, then takes `cost` at `t`. */
async function probe(limits: LimitOptions[], history: Admitted, t: number, cost: number) {
  const clock = new FakeClock(0);
  const limiter = newLimiter(limits, clock);
  for (const h of history) {
    clock.set(h.t);
    const r = await limiter.take('k', { cost: h.cost });
    if (!r.allowed) throw new Error('replay of an admitted request was refused');
  }
  clock.set(t);
  return limiter.take('k', { cost });
}

async function run(limits: LimitOptions[], seq: { advance: number; cost: number }[]) {
  const clock = new FakeClock(10_000);
  const limiter = newLimiter(limits, clock);
  const admitted: Admitted = [];
  const refusals: { t: number; cost: number; retry: number; history: Admitted }[] = [];
  for (const s of seq) {
    clock.advance(s.advance);
    const r = await limiter.take('k', { cost: s.cost });
    if (r.allowed) admitted.push({ t: clock.now(), cost: s.cost });
    else refusals.push({ t: clock.now(), cost: s.cost, retry: r.retryAfterMs, history: [...admitted] });
  }
  return { admitted, refusals };
}

const sum = (xs: Admitted, from: number, to: number) =>
  xs.filter((x) => x.t >= from && x.t <= to).reduce((a, x) => a + x.cost, 0);

describe('memory limiter properties', () => {
  it('sliding-log: no window of its length ever holds more than limit cost', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 10 }), steps(), async (limit, seq) => {
        const { admitted } = await run([limitOf('sliding-log', limit)], seq);
        for (const a of admitted) expect(sum(admitted, a.t - WINDOW + 1, a.t)).toBeLessThanOrEqual(limit);
      }),
      { numRuns: 300 },
    );
  });

  it("sliding-log with a clock that steps back: no window of the log's own timeline holds more than limit cost", async () => {
    // A step back behind the newest entry is decided and recorded at that entry's time (the log's
    // timeline never moves back; fixed and bucketed windows stay in their newest window alike).
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 10 }), steps(['k'], true), async (limit, seq) => {
        const clock = new FakeClock(100_000); // 40 steps back of under a window stay above 0
        const limiter = newLimiter([limitOf('sliding-log', limit)], clock);
        const admitted: Admitted = [];
        let newest = Number.NEGATIVE_INFINITY;
        for (const s of seq) {
          clock.set(clock.now() + s.advance);
          const r = await limiter.take('k', { cost: s.cost });
          if (r.allowed && s.cost > 0) {
            newest = Math.max(newest, clock.now());
            admitted.push({ t: newest, cost: s.cost });
          }
        }
        for (const a of admitted) expect(sum(admitted, a.t - WINDOW + 1, a.t)).toBeLessThanOrEqual(limit);
      }),
      { numRuns: 300 },
    );
  });

  it('fixed-window: no aligned window holds more than limit cost', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 10 }), steps(), async (limit, seq) => {
        const { admitted } = await run([limitOf('fixed-window', limit)], seq);
        for (const a of admitted) {
          const start = a.t - (a.t % WINDOW);
          expect(sum(admitted, start, start + WINDOW - 1)).toBeLessThanOrEqual(limit);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('gcra: any interval [t1, t2] holds at most burst + (t2 - t1) x limit / window', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 10 }),
        steps(),
        async (limit, burst, seq) => {
          const { admitted } = await run([limitOf('gcra', limit, { burst })], seq);
          for (const a of admitted)
            for (const b of admitted) {
              if (b.t < a.t) continue;
              expect(sum(admitted, a.t, b.t) * WINDOW).toBeLessThanOrEqual(
                burst * WINDOW + (b.t - a.t) * limit,
              );
            }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('sliding-window: the window holds at most limit + floor(b x r / G) (b: its oldest bucket)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 10 }),
        fc.constantFrom(GRANULARITY, WINDOW),
        steps(),
        async (limit, g, seq) => {
          const { admitted } = await run([limitOf('sliding-window', limit, { granularity: g })], seq);
          for (const a of admitted) {
            const oldest = (Math.floor(a.t / g) - WINDOW / g) * g;
            const b = sum(admitted, oldest, oldest + g - 1);
            const r = a.t % g;
            expect(sum(admitted, a.t - WINDOW + 1, a.t)).toBeLessThanOrEqual(limit + Math.floor((b * r) / g));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: a refusal changes no state, and retryAfterMs is exact`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 10 }), steps(), async (limit, seq) => {
          const limits = [limitOf(algorithm as Algorithm, limit)];
          const { admitted, refusals } = await run(limits, seq);
          // The admitted requests alone, replayed, get the same answers: the refused ones left no trace.
          const replayClock = new FakeClock(0);
          const replay = newLimiter(limits, replayClock);
          for (const a of admitted) {
            replayClock.set(a.t);
            expect((await replay.take('k', { cost: a.cost })).allowed).toBe(true);
          }
          for (const r of refusals) {
            if (r.retry === Number.POSITIVE_INFINITY) {
              expect(r.cost).toBeGreaterThan(limit);
              continue;
            }
            expect(r.retry).toBeGreaterThan(0);
            expect((await probe(limits, r.history, r.t + r.retry, r.cost)).allowed).toBe(true);
            expect((await probe(limits, r.history, r.t + r.retry - 1, r.cost)).allowed).toBe(false);
          }
        }),
        { numRuns: 150 },
      );
    });
  }

  it('multi-limit: all limits pass or none is charged; the bound limit is named', async () => {
    const limits: LimitOptions[] = [
      { ...limitOf('gcra', 3), id: 'per-second' },
      { ...limitOf('sliding-log', 5), id: 'per-3s', window: 3 * WINDOW },
    ];
    await fc.assert(
      fc.asyncProperty(steps(), async (seq) => {
        const clock = new FakeClock(0);
        const both = newLimiter(limits, clock);
        const first = newLimiter([limits[0] as LimitOptions], clock);
        const second = newLimiter([limits[1] as LimitOptions], clock);
        for (const s of seq) {
          clock.advance(s.advance);
          const r = await both.take('k', { cost: s.cost });
          // The single limiters see only what the pair admitted: they must agree with its parts.
          const parts = r.limits;
          if (r.allowed) {
            expect((await first.take('k', { cost: s.cost })).remaining).toBe(parts[0]?.remaining);
            expect((await second.take('k', { cost: s.cost })).remaining).toBe(parts[1]?.remaining);
          } else {
            const refusing = parts.filter((p) => !p.allowed);
            expect(refusing.length).toBeGreaterThan(0);
            expect(refusing.map((p) => p.id)).toContain(r.bound);
            expect(r.retryAfterMs).toBe(Math.max(...refusing.map((p) => p.retryAfterMs)));
            // Nothing was charged: every part reports its limit as it is now (a cost-0 peek).
            const [p0, p1] = [await first.take('k', { cost: 0 }), await second.take('k', { cost: 0 })];
            expect([parts[0]?.remaining, parts[0]?.resetAt]).toEqual([p0.remaining, p0.resetAt]);
            expect([parts[1]?.remaining, parts[1]?.resetAt]).toEqual([p1.remaining, p1.resetAt]);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('one limit: the one-call path (decideOne) decides every take as the general path', async () => {
    // The memory store decides a take of one limit by its own short way (the state found once,
    // no second pass); a take of several limits goes the general way. The one limit beside a
    // second that never binds (a limit no take reaches) must answer alike at every step, on one
    // clock; and every take of the one-limit limiter is answered synchronously.
    const oneLimit = fc
      .tuple(fc.constantFrom(...ALGORITHMS), fc.integer({ min: 1, max: 10 }), fc.boolean())
      .map(([a, l, coarse]) =>
        limitOf(a, l, a === 'sliding-window' && coarse ? { granularity: WINDOW } : {}),
      );
    await fc.assert(
      fc.asyncProperty(oneLimit, steps(['a', 'b', 'é'], true), async (limit, seq) => {
        const clock = new FakeClock(10_000);
        let oneCalls = 0;
        const base = memoryStore({ clock });
        const counted = inProcessSpy(base, (command, inner) => {
          if (command.limits.length === 1) oneCalls++;
          return inner(command);
        });
        const other = memoryStore({ clock });
        const fast = createLimiter({ store: counted, ...limit, clock, blockCache: false });
        const never = { id: 'never', algorithm: 'fixed-window', limit: 2 ** 40, window: WINDOW } as const;
        const slow = createLimiter({
          store: other,
          limits: [{ ...limit, id: 'one' }, never],
          clock,
          blockCache: false,
        });
        for (const s of seq) {
          clock.set(Math.max(0, clock.now() + s.advance));
          const cost = s.cost === 1 ? undefined : { cost: s.cost };
          const one = await fast.take(s.key, cost);
          const general = await slow.take(s.key, cost);
          expect(one.allowed).toBe(general.allowed);
          expect({ ...one.limits[0], id: 'one' }).toEqual(general.limits[0]);
        }
        // Every take went the one-call way, a key's first too.
        expect(oneCalls).toBe(seq.length);
      }),
      { numRuns: 300 },
    );
  });
});
