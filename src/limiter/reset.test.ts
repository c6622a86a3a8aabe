import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { isOnceflowError } from '../core/errors.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { createLimiter } from './limiter.js';

describe('limiter.reset(key)', () => {
  for (const algorithm of ['sliding-log', 'sliding-window', 'fixed-window', 'gcra'] as const) {
    it(`${algorithm}: forgets one key's usage in every limit, and only that key's`, async () => {
      const clock = new FakeClock(0);
      const limiter = createLimiter({
        store: memoryStore({ clock }),
        clock,
        limits: [
          { id: 'second', algorithm, limit: 3, window: '1s' },
          { id: 'minute', algorithm, limit: 5, window: '1m' },
        ],
      });
      for (const key of ['a', 'b']) await limiter.take(key, { cost: 3 });
      const refused = await limiter.take('a');
      expect(refused).toMatchObject({ allowed: false, bound: 'second' });
      await limiter.reset('a');
      // Afresh in both limits (the block the refusal cached is gone too): 3 of 3 and 5 of 5 left.
      const after = await limiter.take('a');
      expect(after).toMatchObject({ allowed: true, remaining: 2 });
      expect(after.limits.map((l) => l.remaining)).toEqual([2, 4]);
      expect((await limiter.take('b')).allowed).toBe(false);
    });
  }

  it('a multi-subject limiter resets the subjects given, all or by object', async () => {
    const limiter = createLimiter({
      limits: [
        { id: 'user', by: 'user', algorithm: 'fixed-window', limit: 1, window: '1m' },
        { id: 'ip', by: 'ip', algorithm: 'fixed-window', limit: 1, window: '1m' },
      ],
    });
    const subjects = { user: 'u1', ip: '10.0.0.1' };
    expect((await limiter.take(subjects)).allowed).toBe(true);
    expect((await limiter.take(subjects)).allowed).toBe(false);
    await limiter.reset(subjects);
    expect((await limiter.take(subjects)).allowed).toBe(true);
  });

  it('a multi-subject reset forgets the blocks its shared subject caused for other lists', async () => {
    const clock = new FakeClock(1_000_000);
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      clock,
      limits: [
        { id: 'user', by: 'user', algorithm: 'fixed-window', limit: 100, window: '1m' },
        { id: 'ip', by: 'ip', algorithm: 'fixed-window', limit: 1, window: '1m' },
      ],
    });
    await limiter.take({ user: 'u1', ip: 'X' });
    expect((await limiter.take({ user: 'u2', ip: 'X' })).reason).toBe('limited'); // cached as a block
    await limiter.reset({ user: 'u1', ip: 'X' }); // clears ip X, which u2's block came from
    expect(await limiter.take({ user: 'u2', ip: 'X' })).toMatchObject({ allowed: true, reason: 'allowed' });
  });

  // The local fallback counts with scaled limits, whose state shapes may differ from the store's
  // (a GCRA's limit, a sliding log's form past 512): every one of them is cleared.
  for (const [algorithm, limit] of [
    ['fixed-window', 8],
    ['sliding-window', 8],
    ['gcra', 8],
    ['sliding-log', 8],
    ['sliding-log', 1200],
  ] as const) {
    it(`clears the degraded-local counters of the key (${algorithm}, limit ${limit})`, async () => {
      const inner = memoryStore();
      let down = false;
      const store = wrapStore(inner, {
        limiterTake: (cmd) => (down ? Promise.reject(new Error('down')) : inner.limiterTake!(cmd)),
      });
      const limiter = createLimiter({
        store,
        algorithm,
        limit,
        window: '1m',
        degraded: { mode: 'local', share: 0.25 },
      });
      down = true;
      // A quarter: 300 of 1200 puts the sliding log's local state in its other form (512).
      const share = limit / 4;
      for (let i = 0; i < share; i++) expect((await limiter.take('k')).reason).toBe('degraded-local');
      expect((await limiter.take('k')).allowed).toBe(false);
      await limiter.reset('k');
      expect(await limiter.take('k')).toMatchObject({ allowed: true, reason: 'degraded-local' });
    });
  }

  it('a spy on limiterTake over the memory store is a remote store: the block cache answers repeats', async () => {
    const inner = memoryStore();
    let calls = 0;
    const spy = wrapStore(inner, {
      limiterTake: (cmd) => {
        calls++;
        return inner.limiterTake!(cmd);
      },
    });
    const limiter = createLimiter({ store: spy, algorithm: 'fixed-window', limit: 1, window: '1m' });
    for (let i = 0; i < 5; i++) await limiter.take('k');
    // The first take is admitted, the second refused and cached as a block: the rest never reach it.
    expect(calls).toBe(2);
  });

  it('bad keys and a store without limiterDelete (nor limiterAdjust) are typed errors that change nothing', async () => {
    const limiter = createLimiter({ algorithm: 'gcra', limit: 1, window: '1s' });
    await limiter.take('k');
    for (const bad of ['', 'x\ud800', 5, { user: 'u' }]) {
      const err = await limiter.reset(bad as string).catch((e: unknown) => e);
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    }
    expect((await limiter.take('k')).allowed).toBe(false); // still spent
    const inner = memoryStore();
    const noDelete = wrapStore(inner, { limiterDelete: undefined, limiterAdjust: undefined }) as Store;
    const other = createLimiter({ store: noDelete, algorithm: 'gcra', limit: 1, window: '1s' });
    const refused = await other.reset('k').catch((e: unknown) => e);
    expect(isOnceflowError(refused, 'ERR_INVALID_OPTION')).toBe(true);
    expect(String(refused)).toMatch(/`store`.*limiterDelete/);
  });
});
