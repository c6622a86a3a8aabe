// Local-first limits over a remote store, with a fake clock passed in (the store decides at the
// given time, so window edges are exact): several nodes (limiters on the store) saturating one
// key never admit more than limit + nodes x share in any window; a node that dies holding a share
// loses at most it; an unused rest goes back only while its share still counts. Run by
// test/integration/local-first-redis.test.ts (Redis, the cluster) and postgres-local-first.test.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/clock.js';
import { createLocalFirstLimiter } from '../../src/limiter/create-local-first.js';
import { createLimiter } from '../../src/limiter/limiter.js';
import type { LocalFirstLimiter } from '../../src/limiter/local-first.js';
import type { Store } from '../../src/store/store.js';

const W = 1000;

// One seeded schedule per algorithm, the same on every run: most steps a few ms apart (the store
// saturated, shares straddling window edges), now and then a node dying holding what it holds.
function schedule(seed: number) {
  return fc.sample(
    fc.record({
      advance: fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: 0, max: 3 }) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 300 }) },
      ),
      node: fc.nat(2),
      cost: fc.integer({ min: 1, max: 2 }),
      die: fc.integer({ min: 0, max: 49 }).map((n) => n === 0),
    }),
    { seed, numRuns: 600 },
  );
}

export function localFirstChecks(target: { label: string; store: () => Store }): void {
  describe(`local-first limits on ${target.label}`, () => {
    for (const algorithm of ['sliding-log', 'fixed-window', 'sliding-window'] as const) {
      it(`${algorithm}: 3 nodes saturating one key across window edges stay within limit + nodes x share`, async () => {
        const L = 30;
        const nodes = 3;
        const share = 4;
        const clock = new FakeClock(1_700_000_000_000 - 50);
        const store = target.store();
        const made: LocalFirstLimiter[] = [];
        const make = () => {
          const limiter = createLocalFirstLimiter({
            store,
            clock,
            name: `lf-${algorithm}`,
            algorithm,
            limit: L,
            window: W,
            ...(algorithm === 'sliding-window' ? { granularity: 100 } : {}),
            localFirst: { nodes, share, hotAfter: 2, lease: 300 },
          });
          made.push(limiter);
          return limiter;
        };
        const limiters = Array.from({ length: nodes }, make);
        const admitted: [number, number][] = [];
        for (const step of schedule(algorithm.length * 7919)) {
          clock.advance(step.advance);
          const i = step.node % nodes;
          if (step.die) {
            limiters[i] = make();
            continue;
          }
          const d = await (limiters[i] as LocalFirstLimiter).take('hot', { cost: step.cost });
          if (d.allowed) admitted.push([clock.now(), step.cost]);
        }
        const sum = (from: number, to: number) =>
          admitted.reduce((a, [t, c]) => (t >= from && t <= to ? a + c : a), 0);
        for (const [t] of admitted) {
          if (algorithm === 'fixed-window') {
            const start = t - (t % W);
            expect(sum(start, start + W - 1)).toBeLessThanOrEqual(L + nodes * share);
          } else if (algorithm === 'sliding-log') {
            expect(sum(t - W + 1, t)).toBeLessThanOrEqual(L + nodes * share);
          } else {
            // The bucketed estimate's own bound (docs/limits.md) plus the shares' slack.
            const G = 100;
            const oldest = (Math.floor(t / G) - W / G) * G;
            const b = sum(oldest, oldest + G - 1);
            expect(sum(t - W + 1, t)).toBeLessThanOrEqual(L + Math.floor((b * (t % G)) / G) + nodes * share);
          }
        }
        // Saturated: far more was asked than a window holds, over several windows.
        expect(admitted.length).toBeGreaterThan(2 * L);
        // Every node, the dead ones too: their sweep timers stop.
        for (const l of made) await l.release();
      });
    }

    it('a node that dies holding a share loses at most it; a rest goes back only while it counts', async () => {
      const clock = new FakeClock(1_700_000_000_000);
      const store = target.store();
      const options = {
        store,
        clock,
        name: 'lf-die',
        algorithm: 'sliding-log' as const,
        limit: 50,
        window: 10_000,
        localFirst: { nodes: 2, share: 10, hotAfter: 1, lease: '1s' as const },
      };
      const dying = createLocalFirstLimiter(options);
      for (let i = 0; i < 4; i++) expect((await dying.take('k')).allowed).toBe(true);
      const survivor = createLocalFirstLimiter(options);
      let admitted = 0;
      while ((await survivor.take('k')).allowed) admitted++;
      // The dead node's 6 unused points stay spent; nothing else is lost.
      expect(4 + admitted).toBe(50 - 6);
      await survivor.release();
      // A fixed window: a share leased at 900 of a second is given back at 999; one leased at
      // 1900 is not given back at 2000, where it would take points from the next window's takes.
      const fixed = {
        ...options,
        name: 'lf-edge',
        algorithm: 'fixed-window' as const,
        limit: 20,
        window: 1000,
      };
      clock.set(1_700_000_000_900);
      const a = createLocalFirstLimiter(fixed);
      await a.take('k');
      clock.set(1_700_000_000_999);
      await a.release();
      expect((await a.get('k'))?.used).toBe(1);
      const b = createLocalFirstLimiter(fixed);
      clock.set(1_700_000_001_900);
      await b.take('k');
      clock.set(1_700_000_002_000);
      const { localFirst: _, ...plainOptions } = fixed;
      const plain = createLimiter(plainOptions);
      await plain.take('k', { cost: 3 });
      await b.release();
      expect((await b.get('k'))?.used).toBe(3);
    });
  });
}
