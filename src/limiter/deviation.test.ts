import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { StoreError } from '../core/errors.js';
import type { LimiterDeviationEvent, OnceflowEvent } from '../core/observer.js';
import type { LimitCall } from '../store/limiter.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { decide } from '../windows/limits/decision.js';
import type { LimitSpec } from '../windows/limits/types.js';
import { DeviationSampler, MAX_KEYS } from './deviation.js';
import { createLimiter } from './limiter.js';

// The sample, computed apart from the sampler: FNV-1a 32 over UTF-16 units, murmur3's finaliser,
// top 6 bits zero (1 in 64).
function inSample(key: string): boolean {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0 < 2 ** 26;
}

function keys(n: number, sampled: boolean, prefix = 'k'): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if (inSample(`${prefix}${i}`) === sampled) out.push(`${prefix}${i}`);
  return out;
}

const isDeviation = (e: OnceflowEvent): e is LimiterDeviationEvent => e.type === 'deviation';

/**
 * The reference model: every cost the store admitted per key, and the window's sums computed from
 * it by brute force. `bucketOf(key, t)` is the cost of the oldest bucket the estimate reads at t,
 * the `b` of docs/limits.md.
 */
class Admitted {
  readonly #log = new Map<string, [number, number][]>();
  add(key: string, t: number, cost: number): void {
    const log = this.#log.get(key) ?? [];
    log.push([t, cost]);
    this.#log.set(key, log);
  }
  /** Cost admitted in [from, to]. */
  sum(key: string, from: number, to: number): number {
    let s = 0;
    for (const [t, c] of this.#log.get(key) ?? []) if (t >= from && t <= to) s += c;
    return s;
  }
  exact(key: string, t: number, windowMs: number): number {
    return this.sum(key, t - windowMs + 1, t);
  }
  oldestBucket(key: string, t: number, windowMs: number, g: number): number {
    const start = (Math.floor(t / g) - windowMs / g) * g;
    return this.sum(key, start, start + g - 1);
  }
}

/** A sliding-window limiter on the memory store and a fake clock, its events per take. */
function fixture(limit: number, windowMs: number, granularity: number) {
  const clock = new FakeClock(0);
  const events: OnceflowEvent[] = [];
  const limiter = createLimiter({
    store: memoryStore({ clock }),
    clock,
    name: 'api',
    id: 'w',
    algorithm: 'sliding-window',
    limit,
    window: windowMs,
    granularity,
    observer: (e) => events.push(e),
  });
  const admitted = new Admitted();
  return {
    limiter,
    clock,
    admitted,
    /** Takes at t; checks what the sampler may and must report; returns its deviation events. */
    async take(key: string, t: number, cost: number): Promise<LimiterDeviationEvent[]> {
      clock.set(t);
      const before = events.length;
      const d = await limiter.take(key, { cost });
      const seen = events.slice(before).filter(isDeviation);
      if (d.allowed) admitted.add(key, t, cost);
      // (1) only sampled keys, only admissions the store answered.
      if (!d.allowed || !inSample(key)) expect(seen).toEqual([]);
      // Every sampled admission with a cost is reported (fewer than MAX_KEYS keys here, all new).
      else if (cost > 0) expect(seen).toHaveLength(1);
      for (const e of seen) {
        expect(e).toMatchObject({ part: 'limiter', limiter: 'api', limit: 'w', max: limit });
        expect(e.estimate).toBe(limit - d.remaining);
        // (2) the exact admitted cost of (t - window, t].
        const exact = admitted.exact(key, t, windowMs);
        expect(e.exact).toBe(exact);
        // (3) docs/limits.md: the estimate counts the oldest bucket b weighted by (G - r) / G where
        // the window holds some part of it, so exact - floor(b·r/G) <= estimate <= exact +
        // ceil(b·(G - r)/G) (the estimate is read as limit - remaining: rounded up), and the
        // window never holds more than limit + floor(b·r/G).
        const b = admitted.oldestBucket(key, t, windowMs, granularity);
        const r = t % granularity;
        expect(e.estimate).toBeGreaterThanOrEqual(exact - Math.floor((b * r) / granularity));
        expect(e.estimate).toBeLessThanOrEqual(exact + Math.ceil((b * (granularity - r)) / granularity));
        expect(exact).toBeLessThanOrEqual(limit + Math.floor((b * r) / granularity));
      }
      return seen;
    },
  };
}

describe('sliding-window deviation sampling', () => {
  afterEach(() => vi.restoreAllMocks());

  it('samples 1 key in 64, deterministically', () => {
    const sampler = DeviationSampler.for(
      [{ id: 'w', algorithm: 'sliding-window', limit: 10, windowMs: 1000, param: 100 }],
      'x',
      () => {},
    ) as DeviationSampler;
    let n = 0;
    let disagree = 0;
    for (let i = 0; i < 64_000; i++) {
      const key = `user-${i}`;
      if (sampler.sampled(key) !== inSample(key)) disagree++;
      if (inSample(key)) n++;
    }
    expect(disagree).toBe(0);
    expect(n).toBeGreaterThan(800);
    expect(n).toBeLessThan(1200);
  });

  it('classic 2-counter estimate (granularity = window): the example of the docs, both ways', async () => {
    const f = fixture(10, 1000, 1000);
    const [key] = keys(1, true);
    const k = key as string;
    expect(await f.take(k, 900, 8)).toMatchObject([{ estimate: 8, exact: 8 }]);
    // At 1800 the 8 at 900 is inside (800, 1800] in full; the estimate weighs it by 200/1000.
    expect(await f.take(k, 1800, 1)).toMatchObject([{ estimate: 3, exact: 9 }]);
    // At 2050 the bucket [1000, 2000) holds 1, weighed by 950/1000; exact: the 1 at 1800 and this one.
    expect(await f.take(k, 2050, 1)).toMatchObject([{ estimate: 2, exact: 2 }]);
    const g = fixture(10, 1000, 1000);
    expect(await g.take(k, 100, 8)).toMatchObject([{ estimate: 8, exact: 8 }]);
    // At 1500 the 8 at 100 left the window; the estimate still counts half of it.
    expect(await g.take(k, 1500, 1)).toMatchObject([{ estimate: 5, exact: 1 }]);
  });

  it('exact at window edges: an admission counts until now - window, not at it', async () => {
    const f = fixture(100, 1000, 100);
    const [k] = keys(1, true) as [string];
    await f.take(k, 1000, 3);
    expect(await f.take(k, 1999, 1)).toMatchObject([{ exact: 4 }]);
    expect(await f.take(k, 2000, 1)).toMatchObject([{ exact: 2 }]); // 1000 = 2000 - window: out
    expect(await f.take(k, 2999, 0)).toMatchObject([{ exact: 1 }]); // a read of a tracked key
    expect(await f.take(k, 3000, 0)).toMatchObject([{ exact: 0 }]); // emptied: dropped after it
    expect(await f.take(k, 3001, 0)).toEqual([]); // an untracked read reports nothing
  });

  it('property: exact equals a brute-force model and the documented bounds hold, at window and bucket edges', async () => {
    const sampled = keys(3, true);
    const others = keys(3, false);
    const all = [...sampled, ...others];
    const W = 1000;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 12 }),
        fc.constantFrom(1, 2, 4, 5, 10),
        fc.array(
          fc.record({
            key: fc.integer({ min: 0, max: all.length - 1 }),
            dt: fc.oneof(
              fc.constantFrom(0, 1, 99, 100, 101, 199, 200, 999, 1000, 1001),
              fc.integer({ min: 0, max: 2500 }),
            ),
            cost: fc.integer({ min: 0, max: 14 }),
          }),
          { maxLength: 40 },
        ),
        async (limit, buckets, steps) => {
          const f = fixture(limit, W, W / buckets);
          let t = 0;
          for (const s of steps) {
            t += s.dt;
            await f.take(all[s.key] as string, t, s.cost);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('granularity = window under uneven traffic: the deviation is measured, not zero', async () => {
    const f = fixture(50, 1000, 1000);
    const ks = keys(4, true);
    let off = 0;
    let t = 0;
    // Bursts late in one window, then a trickle through the next: the classic estimate's blind spot.
    for (let w = 0; w < 20; w++) {
      for (const k of ks) for (const e of await f.take(k, t + 900 + w, 5)) if (e.estimate !== e.exact) off++;
      t += 1000;
      for (let i = 0; i < 5; i++)
        for (const k of ks)
          for (const e of await f.take(k, t + 100 * i, 1)) if (e.estimate !== e.exact) off++;
    }
    expect(off).toBeGreaterThan(20);
  });

  it('reports no deviation for refused, blocked or degraded answers', async () => {
    const [k] = keys(1, true) as [string];
    const clock = new FakeClock(0);
    const events: OnceflowEvent[] = [];
    let down = false;
    const inner = memoryStore({ clock });
    // Answers with promises, as a remote store does: the block cache serves repeated refusals.
    const store: Store = wrapStore(inner, {
      limiterTake: (command) =>
        down
          ? Promise.reject(new StoreError('limiterTake', new Error('down')))
          : Promise.resolve(inner.limiterTake?.(command) as never),
    });
    const limiter = createLimiter({
      store,
      clock,
      degraded: 'allow',
      algorithm: 'sliding-window',
      limit: 2,
      window: '1s',
      observer: (e) => events.push(e),
    });
    const reasons: string[] = [];
    for (let i = 0; i < 4; i++) reasons.push((await limiter.take(k)).reason);
    down = true;
    reasons.push((await limiter.take(k, { cost: 0 })).reason);
    clock.advance(5000);
    reasons.push((await limiter.take(k)).reason);
    expect(reasons).toEqual(['allowed', 'allowed', 'limited', 'blocked', 'degraded-allow', 'degraded-allow']);
    expect(events.filter(isDeviation).map((e) => e.exact)).toEqual([1, 2]);
  });

  it('samples each sliding-window limit by its own subject, and not a limit too large to log', async () => {
    const clock = new FakeClock(0);
    const events: OnceflowEvent[] = [];
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      clock,
      limits: [
        {
          id: 'user',
          algorithm: 'sliding-window',
          limit: 10,
          window: '1s',
          granularity: '100ms',
          by: 'user',
        },
        { id: 'ip', algorithm: 'sliding-window', limit: 10, window: '1s', by: 'ip' },
        { id: 'ip-fixed', algorithm: 'fixed-window', limit: 10, window: '1s', by: 'ip' },
        { id: 'huge', algorithm: 'sliding-window', limit: 5000, window: '1s', by: 'user' },
      ],
      observer: (e) => events.push(e),
    });
    const [su] = keys(1, true, 'u') as [string];
    const [nu] = keys(1, false, 'u') as [string];
    const [sip] = keys(1, true, 'ip') as [string];
    const [nip] = keys(1, false, 'ip') as [string];
    const limitsOf = async (user: string, ip: string) => {
      const before = events.length;
      await limiter.take({ user, ip }, { cost: 2 });
      return events
        .slice(before)
        .filter(isDeviation)
        .map((e) => [e.limit, e.exact]);
    };
    expect(await limitsOf(su, nip)).toEqual([['user', 2]]);
    expect(await limitsOf(nu, sip)).toEqual([['ip', 2]]);
    expect(await limitsOf(su, sip)).toEqual([
      ['user', 4],
      ['ip', 4],
    ]);
    expect(await limitsOf(nu, nip)).toEqual([]);
    // reset forgets the key's logs (the store's state too): the next admission counts alone.
    await limiter.reset({ user: su, ip: sip });
    expect(await limitsOf(su, sip)).toEqual([
      ['user', 2],
      ['ip', 2],
    ]);
  });

  it(`tracks at most ${MAX_KEYS} keys, turns stale ones over, and reports a late-tracked key only once its window is whole`, () => {
    const clock = new FakeClock(0);
    const store = memoryStore({ clock });
    const spec: LimitSpec = { id: 'w', algorithm: 'sliding-window', limit: 5, windowMs: 1000, param: 1000 };
    const events: LimiterDeviationEvent[] = [];
    const sampler = DeviationSampler.for([spec], 'x', (e) =>
      events.push(e as LimiterDeviationEvent),
    ) as DeviationSampler;
    const admitted = new Admitted();
    const take = (key: string, t: number): number => {
      clock.set(t);
      const calls: LimitCall[] = [{ spec, subject: key }];
      const reply = store.limiterTake?.({ namespace: 'n', limits: calls, cost: 1, now: t }) as never as {
        now: number;
        allowed: boolean;
        verdicts: never[];
      };
      const before = events.length;
      const d = decide(reply.now, reply.allowed, reply.verdicts, undefined);
      if (d.allowed) admitted.add(key, t, 1);
      sampler.admitted(calls, 1, d);
      expect(sampler.size).toBeLessThanOrEqual(MAX_KEYS);
      for (const e of events.slice(before)) expect(e.exact).toBe(admitted.exact(key, t, 1000));
      return events.length - before;
    };
    const ks = keys(MAX_KEYS + 40, true);
    const late = ks[MAX_KEYS] as string;
    let reported = 0;
    for (const k of ks) reported += take(k, 0);
    expect(reported).toBe(MAX_KEYS);
    expect(sampler.size).toBe(MAX_KEYS);
    // Full, and no tracked key is stale yet: `late` is admitted but not tracked.
    expect(take(late, 900)).toBe(0);
    // At 1500 the keys last admitted at 0 are stale: `late` takes one's place, but its 900 (in
    // the window, missed) makes its log incomplete until a whole window has passed.
    expect(take(late, 1500)).toBe(0);
    expect(sampler.size).toBe(MAX_KEYS);
    expect(take(late, 2000)).toBe(0);
    expect(take(late, 2500)).toBe(1);
    expect(events.at(-1)).toMatchObject({ exact: 2 }); // 2000 and 2500
    // A tracked key keeps reporting; new keys keep turning stale ones over.
    expect(take(late, 2600)).toBe(1);
    expect(take(ks[MAX_KEYS + 1] as string, 2700)).toBe(1); // a fresh key: its window was empty
    expect(sampler.size).toBe(MAX_KEYS);
  });

  it('no observer, or no sliding-window limit: no sampler is built', () => {
    const built = vi.spyOn(DeviationSampler, 'for');
    createLimiter({ algorithm: 'sliding-window', limit: 5, window: '1s' });
    createLimiter({ algorithm: 'gcra', limit: 5, window: '1s', observer: () => {} });
    createLimiter({ algorithm: 'sliding-window', limit: 5, window: '1s', observer: () => {} });
    expect(built.mock.results.map((r) => r.value instanceof DeviationSampler)).toEqual([false, false, true]);
    expect(built.mock.results.slice(0, 2).map((r) => r.value)).toEqual([undefined, undefined]);
  });
});
