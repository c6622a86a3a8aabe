import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { StoreError } from '../core/errors.js';
import type { OnceflowEvent } from '../core/observer.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { createLimiter } from './limiter.js';

const decision = (limiter: string, allowed: boolean, reason: string) => ({
  part: 'limiter',
  type: 'decision',
  limiter,
  allowed,
  reason,
});

describe('limiter observer', () => {
  afterEach(() => vi.restoreAllMocks());

  it('sees allowed, limited and cost-exceeds-limit on the memory store, with the limiter name', async () => {
    const seen: OnceflowEvent[] = [];
    const limiter = createLimiter({
      name: 'api',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1m',
      observer: (e) => seen.push(e),
    });
    await limiter.take('u');
    await limiter.take('u');
    await limiter.take('v', { cost: 5 });
    expect(seen).toEqual([
      decision('api', true, 'allowed'),
      decision('api', false, 'limited'),
      decision('api', false, 'cost-exceeds-limit'),
    ]);
  });

  it('sees a block cache answer as blocked, on a remote store', async () => {
    const seen: OnceflowEvent[] = [];
    const clock = new FakeClock(0);
    // wrapStore answers takes with promises, as a remote store does: the block cache serves them.
    const limiter = createLimiter({
      store: wrapStore(memoryStore({ clock }), {}),
      clock,
      algorithm: 'fixed-window',
      limit: 1,
      window: '1m',
      observer: (e) => seen.push(e),
    });
    for (let i = 0; i < 3; i++) await limiter.take('u');
    expect(seen).toEqual([
      decision('default', true, 'allowed'),
      decision('default', false, 'limited'),
      decision('default', false, 'blocked'),
    ]);
  });

  it.each([
    ['deny', 'deny', false, 'degraded-deny'],
    ['allow', 'allow', true, 'degraded-allow'],
    [{ mode: 'local', share: 0.5 }, 'local', true, 'degraded-local'],
  ] as const)('sees a store failure answered by policy %j', async (degraded, policy, allowed, reason) => {
    const seen: OnceflowEvent[] = [];
    const store = wrapStore(memoryStore(), {
      limiterTake: () => Promise.reject(new StoreError('limiterTake', new Error('down'))),
    });
    const limiter = createLimiter({
      store,
      degraded,
      algorithm: 'gcra',
      limit: 4,
      window: '1s',
      observer: (e) => seen.push(e),
    });
    expect((await limiter.take('u')).reason).toBe(reason);
    expect(seen).toEqual([
      { part: 'limiter', type: 'degraded', limiter: 'default', policy, error: 'ERR_STORE' },
      decision('default', allowed, reason),
    ]);
  });

  it("sees the 'throw' policy's failure as degraded, and no decision", async () => {
    const seen: OnceflowEvent[] = [];
    const store = wrapStore(memoryStore(), { limiterTake: () => Promise.reject(new TypeError('bug')) });
    const limiter = createLimiter({
      store,
      algorithm: 'gcra',
      limit: 4,
      window: '1s',
      observer: (e) => seen.push(e),
    });
    await expect(limiter.take('u')).rejects.toMatchObject({ code: 'ERR_STORE' });
    expect(seen).toEqual([
      { part: 'limiter', type: 'degraded', limiter: 'default', policy: 'throw', error: 'TypeError' },
    ]);
  });

  it('keeps deciding when the observer throws, and reports it once', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const limiter = createLimiter({
      algorithm: 'fixed-window',
      limit: 1,
      window: '1m',
      observer: () => {
        throw new Error('observer bug');
      },
    });
    expect((await limiter.take('u')).allowed).toBe(true);
    expect((await limiter.take('u')).reason).toBe('limited');
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('refuses an observer that is not a function', () => {
    expect(() => createLimiter({ algorithm: 'gcra', limit: 1, window: '1s', observer: 1 as never })).toThrow(
      /`observer`/,
    );
  });
});
