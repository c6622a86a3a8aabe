import { describe, expect, it } from 'vitest';
import { backoffDelay, DEFAULT_RETRY, retryPolicy } from './backoff.js';

describe('backoff with full jitter', () => {
  const policy = retryPolicy({ attempts: 10, base: 100, max: 1000 });

  it('draws uniformly below a cap that doubles from base and stops at max', () => {
    const caps = [100, 200, 400, 800, 1000, 1000, 1000];
    for (const [i, cap] of caps.entries()) {
      expect(backoffDelay(policy, i + 1, () => 0)).toBe(0);
      expect(backoffDelay(policy, i + 1, () => 0.5)).toBe(cap / 2);
      expect(backoffDelay(policy, i + 1, () => 0.999999)).toBe(cap - 1);
    }
  });

  it('never leaves [0, cap) for any draw, even a broken random outside [0, 1), or a huge attempt', () => {
    for (const r of [-1, 0, 0.3, 0.99999999999, 1, 2, Number.NaN]) {
      for (const attempt of [1, 2, 5, 64, 1e6]) {
        const d = backoffDelay(policy, attempt, () => r);
        expect(Number.isInteger(d) || Number.isNaN(r)).toBe(true);
        if (!Number.isNaN(r)) {
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThan(Math.min(1000, 100 * 2 ** (attempt - 1)));
        }
      }
    }
  });

  it('refuses a wait a timer cannot hold (over 2^31 - 1 ms), by name: it would fire at once, a busy retry', () => {
    expect(() => retryPolicy({ max: '25d' })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'retry.max' }),
    );
    expect(() => retryPolicy({ base: 2 ** 31, max: 2 ** 31 })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'retry.base' }),
    );
    expect(retryPolicy({ max: 2 ** 31 - 1 }).maxMs).toBe(2 ** 31 - 1);
  });

  it('spreads draws over the whole range (jitter, not a fixed wait)', () => {
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const draws = Array.from({ length: 2000 }, () => backoffDelay(policy, 3, random));
    const buckets = [0, 0, 0, 0];
    for (const d of draws) buckets[Math.floor(d / 100)] = (buckets[Math.floor(d / 100)] ?? 0) + 1;
    for (const b of buckets) expect(b).toBeGreaterThan(400); // ~500 each of 2000 over 4 buckets
  });

  it('validates the policy and names the option', () => {
    expect(retryPolicy(undefined)).toBe(DEFAULT_RETRY);
    expect(retryPolicy({ base: '1s', max: '10s' })).toEqual({ attempts: 8, baseMs: 1000, maxMs: 10_000 });
    expect(() => retryPolicy({ attempts: 0 })).toThrow(expect.objectContaining({ option: 'retry.attempts' }));
    expect(() => retryPolicy({ attempts: 1.5 })).toThrow(
      expect.objectContaining({ option: 'retry.attempts' }),
    );
    expect(() => retryPolicy({ base: 0 })).toThrow(expect.objectContaining({ option: 'retry.base' }));
    expect(() => retryPolicy({ base: 'soon' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_DURATION', option: 'retry.base' }),
    );
    expect(() => retryPolicy({ base: 100, max: 50 })).toThrow(
      expect.objectContaining({ option: 'retry.max' }),
    );
    expect(() => retryPolicy(5 as never)).toThrow(expect.objectContaining({ option: 'retry' }));
  });

  it('the default retry span is bounded as its comment derives (6.35 s of waits at most)', () => {
    let worst = 0;
    for (let a = 1; a < DEFAULT_RETRY.attempts; a++) worst += backoffDelay(DEFAULT_RETRY, a, () => 0.9999999);
    expect(worst).toBeGreaterThan(6300);
    expect(worst).toBeLessThan(6350);
  });
});
