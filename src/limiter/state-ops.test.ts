import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { isOnceflowError } from '../core/errors.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { createLimiter } from './limiter.js';

const fixed = (clock: FakeClock, extra: Record<string, unknown> = {}) =>
  createLimiter({
    store: memoryStore({ clock }),
    clock,
    algorithm: 'fixed-window',
    limit: 5,
    window: '1s',
    ...extra,
  });

describe('limiter state operations', () => {
  it('get answers undefined for an unknown key, then the usage per limit', async () => {
    const clock = new FakeClock(10_000);
    const limiter = fixed(clock);
    expect(await limiter.get('k')).toBeUndefined();
    await limiter.take('k', { cost: 2 });
    const state = await limiter.get('k');
    expect(state).toMatchObject({
      bound: '5/1s',
      used: 2,
      remaining: 3,
      resetAt: 11_000,
      blockedUntil: 0,
      at: 10_000,
    });
    expect(state?.limits).toEqual([
      { id: '5/1s', limit: 5, windowMs: 1000, used: 2, remaining: 3, resetAt: 11_000, blockedUntil: 0 },
    ]);
    clock.advance(1000);
    expect(await limiter.get('k')).toBeUndefined(); // the window ran out: no state
  });

  it('reset resolves whether the key had usage', async () => {
    const clock = new FakeClock(10_000);
    const limiter = fixed(clock);
    expect(await limiter.reset('k')).toBe(false);
    await limiter.take('k');
    expect(await limiter.reset('k')).toBe(true);
    expect(await limiter.reset('k')).toBe(false);
    expect(await limiter.get('k')).toBeUndefined();
  });

  it('set, reward and penalty change the usage; penalty may pass the limit, reward never goes below 0', async () => {
    const clock = new FakeClock(10_000);
    const limiter = fixed(clock);
    expect((await limiter.penalty('k', 7))?.used).toBe(7);
    const refused = await limiter.take('k');
    expect([refused.allowed, refused.remaining, refused.retryAfterMs]).toEqual([false, 0, 1000]);
    expect((await limiter.reward('k', 3))?.used).toBe(4);
    expect((await limiter.take('k')).remaining).toBe(0);
    expect(await limiter.reward('k', 100)).toBeUndefined();
    expect((await limiter.set('k', 5))?.remaining).toBe(0);
    expect((await limiter.take('k')).allowed).toBe(false);
    expect(await limiter.set('k', 0)).toBeUndefined();
    expect((await limiter.take('k')).allowed).toBe(true);
    for (const bad of [-1, 1.5, Number.NaN, '3']) {
      const err = await limiter.penalty('k', bad as number).catch((e: unknown) => e);
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    }
    expect((await limiter.get('k'))?.used).toBe(1); // the refused calls changed nothing
  });

  it('a refused take answers from the store after set or reward, not from a cached refusal', async () => {
    const clock = new FakeClock(10_000);
    // Time passed in: the block cache stands in front of the store.
    const limiter = fixed(clock);
    await limiter.take('k', { cost: 5 });
    expect((await limiter.take('k')).allowed).toBe(false);
    await limiter.reward('k', 2);
    expect((await limiter.take('k')).allowed).toBe(true);
  });

  it('isFirstInDuration: true when the take found the bound limit with no usage', async () => {
    const clock = new FakeClock(10_000);
    const limiter = fixed(clock);
    expect((await limiter.take('k')).isFirstInDuration).toBe(true);
    expect((await limiter.take('k')).isFirstInDuration).toBe(false);
    clock.advance(1000);
    expect((await limiter.take('k', { cost: 3 })).isFirstInDuration).toBe(true);
    await limiter.take('k', { cost: 2 });
    expect((await limiter.take('k')).isFirstInDuration).toBe(false); // refused
    // GCRA: the burst is its capacity.
    const g = createLimiter({
      store: memoryStore({ clock }),
      clock,
      algorithm: 'gcra',
      limit: 10,
      window: '1s',
      burst: 4,
    });
    expect((await g.take('k', { cost: 2 })).isFirstInDuration).toBe(true);
    expect((await g.take('k')).isFirstInDuration).toBe(false);
    clock.advance(1000);
    expect((await g.take('k')).isFirstInDuration).toBe(true);
  });

  it('blockDuration: a refusal blocks the key in the store until it ends, across windows', async () => {
    const clock = new FakeClock(10_000);
    const store = memoryStore({ clock });
    const options = {
      store,
      clock,
      algorithm: 'fixed-window',
      limit: 1,
      window: '1s',
      blockDuration: '5s',
    } as const;
    const limiter = createLimiter(options);
    // Another limiter on the same store (another process) sees the block: it lives in the store.
    const other = createLimiter({ ...options, blockCache: false });
    await limiter.take('k');
    clock.advance(100);
    const refused = await limiter.take('k');
    expect([refused.allowed, refused.retryAfterMs, refused.resetAt]).toEqual([false, 5000, 15_100]);
    clock.advance(1900);
    const blocked = await other.take('k');
    expect([blocked.allowed, blocked.retryAfterMs]).toEqual([false, 3100]);
    expect((await other.get('k'))?.blockedUntil).toBe(15_100);
    clock.advance(3100);
    expect((await other.take('k')).allowed).toBe(true);
  });

  it('block(key, duration) blocks the limits with a blockDuration; 0 lifts it', async () => {
    const clock = new FakeClock(10_000);
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      clock,
      limits: [
        { id: 'b', algorithm: 'fixed-window', limit: 5, window: '1s', blockDuration: '1s' },
        { id: 'p', algorithm: 'gcra', limit: 100, window: '1s' },
      ],
    });
    await limiter.block('k', '2s');
    const d = await limiter.take('k');
    expect([d.allowed, d.bound, d.retryAfterMs]).toEqual([false, 'b', 2000]);
    await limiter.block('k', 0);
    expect((await limiter.take('k')).allowed).toBe(true);
    const plain = fixed(clock);
    const err = await plain.block('k', '1s').catch((e: unknown) => e);
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect(String(err)).toMatch(/blockDuration/);
    const bad = await limiter.block('k', -1 as never).catch((e: unknown) => e);
    expect(isOnceflowError(bad)).toBe(true);
  });

  it('options: blockDuration positive and at most a year; it needs a store with limiterAdjust', () => {
    const clock = new FakeClock(0);
    for (const blockDuration of [0, '0ms', -5, '2y', 366 * 86_400_000]) {
      expect(() => fixed(clock, { blockDuration })).toThrow(/blockDuration/);
    }
    const noAdjust = wrapStore(memoryStore({ clock }), { limiterAdjust: undefined }) as Store;
    expect(() =>
      createLimiter({
        store: noAdjust,
        algorithm: 'fixed-window',
        limit: 1,
        window: '1s',
        blockDuration: '1s',
      }),
    ).toThrow(/blockDuration.*limiterAdjust/);
  });

  it('a store without limiterAdjust refuses get, set, reward, penalty, block by name', async () => {
    const noAdjust = wrapStore(memoryStore(), { limiterAdjust: undefined }) as Store;
    const limiter = createLimiter({ store: noAdjust, algorithm: 'fixed-window', limit: 1, window: '1s' });
    for (const call of [
      () => limiter.get('k'),
      () => limiter.set('k', 1),
      () => limiter.reward('k', 1),
      () => limiter.penalty('k', 1),
    ]) {
      const err = await call().catch((e: unknown) => e);
      expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
      expect(String(err)).toMatch(/limiterAdjust/);
    }
    // reset falls back to limiterDelete: whether the store held a state.
    await limiter.take('k');
    expect(await limiter.reset('k')).toBe(true);
  });
});

describe('pacing (take with maxWait)', () => {
  it('waits out a refusal whose wait fits in maxWait, and answers one that does not at once', async () => {
    const limiter = createLimiter({ algorithm: 'fixed-window', limit: 1, window: '50ms' });
    const first = await limiter.take('k');
    expect(first.allowed).toBe(true);
    // The next window is at most 50 ms away: within 10 s it is admitted.
    const paced = await limiter.take('k', { maxWait: '10s' });
    expect(paced.allowed).toBe(true);
    expect(paced.at).toBeGreaterThanOrEqual(first.resetAt);
    // A wait longer than maxWait: refused without waiting.
    const clock = new FakeClock(0);
    const hourly = createLimiter({
      store: memoryStore({ clock }),
      clock,
      algorithm: 'fixed-window',
      limit: 1,
      window: '1h',
    });
    await hourly.take('k');
    const refused = await hourly.take('k', { maxWait: '1s' });
    expect([refused.allowed, refused.reason]).toEqual([false, 'limited']);
  });

  it('never waits for a cost above the limit, and checks maxWait', async () => {
    const limiter = createLimiter({ algorithm: 'fixed-window', limit: 1, window: '1h' });
    const never = await limiter.take('k', { cost: 2, maxWait: '1h' });
    expect([never.allowed, never.reason]).toEqual([false, 'cost-exceeds-limit']);
    for (const maxWait of [-1, 'soon', Number.NaN]) {
      const err = await limiter.take('k', { maxWait: maxWait as never }).catch((e: unknown) => e);
      expect(isOnceflowError(err)).toBe(true);
    }
    const typo = await limiter.take('k', { maxwait: 5 } as never).catch((e: unknown) => e);
    expect(String(typo)).toMatch(/maxWait/);
  });
});
