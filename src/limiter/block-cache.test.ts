import { describe, expect, it } from 'vitest';
import { decide, type RefusedDecision } from '../windows/limits/decision.js';
import { BlockCache } from './block-cache.js';

/** A refusal of the store with a wait of `retryAfterMs`, decided at `at`. */
function refusal(retryAfterMs: number, at = 0): RefusedDecision {
  const part = { id: 'l', allowed: false as const, limit: 1, windowMs: 1000, remaining: 0, retryAfterMs };
  return decide(at, false, [{ ...part, resetAt: at + retryAfterMs }], undefined);
}

const keysOf = (cache: BlockCache, keys: string[], now: number) =>
  keys.filter((k) => cache.get(k, 1, now) !== undefined);

describe('BlockCache', () => {
  it('a hit refreshes recency: with max 3, the touched oldest survives one more insert, the untouched next-oldest goes', () => {
    const cache = new BlockCache(3);
    for (const key of ['a', 'b', 'c']) cache.set(key, 1, 0, refusal(1000));
    expect(cache.get('a', 1, 10)).toBeDefined(); // a: oldest inserted, now the most recent
    cache.set('d', 1, 10, refusal(1000));
    expect(cache.size).toBe(3);
    expect(keysOf(cache, ['a', 'b', 'c', 'd'], 20)).toEqual(['a', 'c', 'd']);
  });

  it('without a hit the oldest inserted is the one evicted', () => {
    const cache = new BlockCache(3);
    for (const key of ['a', 'b', 'c', 'd']) cache.set(key, 1, 0, refusal(1000));
    expect(keysOf(cache, ['a', 'b', 'c', 'd'], 20)).toEqual(['b', 'c', 'd']);
  });

  it('a hit for another cost is not a hit and does not refresh recency', () => {
    const cache = new BlockCache(2);
    cache.set('a', 1, 0, refusal(1000));
    cache.set('b', 1, 0, refusal(1000));
    expect(cache.get('a', 2, 10)).toBeUndefined(); // cost 2 goes to the store
    cache.set('c', 1, 10, refusal(1000));
    expect(keysOf(cache, ['a', 'b', 'c'], 20)).toEqual(['b', 'c']);
  });

  it('a block holds until asked + retryAfterMs, and is gone at that instant', () => {
    const cache = new BlockCache(10);
    const d = refusal(250, 5_000);
    cache.set('k', 1, 1_000, d); // asked at local time 1 000: holds until 1 250
    const kept = cache.get('k', 1, 1_249)?.decision;
    // A copy of it: the caller holds `d` and may change it.
    expect(kept).toEqual(d);
    expect(kept).not.toBe(d);
    (d as { retryAfterMs: number }).retryAfterMs = 0;
    (d.limits[0] as { remaining: number }).remaining = 99;
    expect(cache.get('k', 1, 1_249)?.decision).toEqual(kept);
    expect(cache.get('k', 1, 1_249)?.decision.retryAfterMs).toBe(250);
    expect(cache.get('k', 1, 1_250)).toBeUndefined();
    expect(cache.size).toBe(0); // an expired block is dropped when read
    // Expiry is per entry: a longer block set at the same time outlives a shorter one.
    cache.set('short', 1, 2_000, refusal(100));
    cache.set('long', 1, 2_000, refusal(300));
    expect(keysOf(cache, ['short', 'long'], 2_100)).toEqual(['long']);
    expect(keysOf(cache, ['short', 'long'], 2_299)).toEqual(['long']);
    expect(keysOf(cache, ['short', 'long'], 2_300)).toEqual([]);
  });

  it('the bound holds under any number of keys, and a re-set key is not counted twice', () => {
    const cache = new BlockCache(5);
    for (let i = 0; i < 100; i++) {
      cache.set(`k${i}`, 1, i, refusal(10_000));
      cache.set(`k${i}`, 1, i, refusal(10_000));
      expect(cache.size).toBeLessThanOrEqual(5);
    }
    expect(cache.size).toBe(5);
    expect(keysOf(cache, ['k94', 'k95', 'k96', 'k97', 'k98', 'k99'], 200)).toEqual([
      'k95',
      'k96',
      'k97',
      'k98',
      'k99',
    ]);
  });

  it('delete and clear forget blocks', () => {
    const cache = new BlockCache(5);
    cache.set('a', 1, 0, refusal(1000));
    cache.set('b', 1, 0, refusal(1000));
    cache.delete('a');
    expect(keysOf(cache, ['a', 'b'], 1)).toEqual(['b']);
    cache.clear();
    expect(cache.size).toBe(0);
  });
});
