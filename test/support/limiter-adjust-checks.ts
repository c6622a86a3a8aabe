// The limiter's state operations and blocks over a remote store, on the store's own clock: what
// one limiter (one process) does to a key, another limiter on the same store sees. Run by
// test/integration/limiter-adjust-redis.test.ts and postgres-limiter-adjust.test.ts.
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../../src/limiter/limiter.js';
import type { Store } from '../../src/store/store.js';

export function limiterAdjustChecks(target: { label: string; store: () => Store }): void {
  describe(`limiter state operations on ${target.label}`, () => {
    it('a block set by one process refuses the takes of another until it ends; reset lifts it', async () => {
      const store = target.store();
      const options = {
        store,
        name: 'blocks',
        algorithm: 'fixed-window',
        limit: 1,
        window: '1h',
        blockDuration: '1h',
        blockCache: false,
      } as const;
      const a = createLimiter(options);
      const b = createLimiter(options);
      const first = await a.take('k');
      expect([first.allowed, first.isFirstInDuration]).toEqual([true, true]);
      const refused = await a.take('k');
      expect(refused.allowed).toBe(false);
      // Blocked for an hour from the refusal: longer than the window's end.
      expect(refused.retryAfterMs).toBe(3_600_000);
      const seen = await b.get('k');
      expect(seen?.used).toBe(1);
      expect(seen?.blockedUntil).toBe(refused.at + 3_600_000);
      expect(await b.reset('k')).toBe(true);
      expect(await a.get('k')).toBeUndefined();
      expect((await a.take('k')).isFirstInDuration).toBe(true);
      await b.block('k', '10m');
      expect((await a.take('k', { cost: 0 })).allowed).toBe(false);
      await b.block('k', 0);
      expect((await a.take('k', { cost: 0 })).allowed).toBe(true);
      expect(await a.reset('k')).toBe(true);
    });

    it('set, reward and penalty, seen by every process', async () => {
      const store = target.store();
      const options = {
        store,
        name: 'points',
        algorithm: 'gcra',
        limit: 10,
        window: '1h',
        blockCache: false,
      } as const;
      const a = createLimiter(options);
      const b = createLimiter(options);
      expect(await a.get('k')).toBeUndefined();
      expect((await a.penalty('k', 12))?.used).toBe(12);
      expect((await b.take('k')).allowed).toBe(false);
      // 12 - 5 = 7 intervals ahead (time passes on the store: still 7, rounded up).
      expect((await b.reward('k', 5))?.used).toBe(7);
      expect((await b.take('k', { cost: 3 })).allowed).toBe(true);
      expect((await a.set('k', 2))?.remaining).toBe(8);
      expect(await a.set('k', 0)).toBeUndefined();
      expect(await b.reset('k')).toBe(false);
    });
  });
}
