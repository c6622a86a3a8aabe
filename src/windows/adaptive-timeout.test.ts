import { describe, expect, it } from 'vitest';
import { AdaptiveTimeout } from './adaptive-timeout.js';

// The quantile is the nearest rank: the smallest sample with at least `quantile` of the sample
// at or below it, rank ceil(quantile x n). These pin it where ceil and floor (or a rank off by
// one) part: quantile x n just above and just below a whole number, and at both ends.
const ranked = (quantile: number, n: number): number | null => {
  // A recompute every 16 samples: n a multiple of 16 leaves every sample counted.
  const t = new AdaptiveTimeout({ quantile, factor: 1, min: 0, max: 1_000_000, sampleSize: n });
  // Samples 1..n in a scrambled order: the rank is of the sorted sample, not of arrival.
  for (let i = 0; i < n; i++) t.record(((i * 7) % n) + 1);
  return t.stats().quantileMs;
};

describe('AdaptiveTimeout quantile (nearest rank)', () => {
  it('p99 of 16 samples is the largest: rank ceil(15.84) = 16, not 15', () => {
    expect(ranked(0.99, 16)).toBe(16);
  });

  it('a quantile that lands on a whole rank takes that sample, not the next', () => {
    expect(ranked(0.5, 16)).toBe(8);
    expect(ranked(0.25, 16)).toBe(4);
    expect(ranked(0.99, 1600)).toBe(1584);
  });

  it('just above a whole rank takes the next sample; just below, that one', () => {
    expect(ranked(0.5 + 1e-9, 16)).toBe(9);
    expect(ranked(0.5 - 1e-9, 16)).toBe(8);
    expect(ranked(1 / 16 + 1e-9, 16)).toBe(2);
  });

  it('the ends: quantile 1 is the largest sample; the smallest quantile is the smallest sample', () => {
    expect(ranked(1, 32)).toBe(32);
    expect(ranked(0.001, 32)).toBe(1);
    expect(ranked(1e-9, 16)).toBe(1);
  });

  it('the timeout is the quantile times the factor, rounded up and clamped, over the newest samples only', () => {
    const t = new AdaptiveTimeout({ quantile: 0.9, factor: 1.5, min: 5, max: 100, sampleSize: 16 });
    // 16 old samples of 1000 ms, then 16 new ones 1..16: only the new ones are in the sample.
    for (let i = 0; i < 16; i++) t.record(1000);
    expect(t.timeoutMs).toBe(100); // 1000 x 1.5, clamped to max
    for (let i = 16; i >= 1; i--) t.record(i);
    // rank ceil(0.9 x 16) = ceil(14.4) = 15: sample 15, x 1.5 = 22.5, up to 23.
    expect(t.stats()).toMatchObject({ quantileMs: 15, timeoutMs: 23, samples: 16 });
    for (let i = 0; i < 16; i++) t.record(0);
    expect(t.timeoutMs).toBe(5); // 0 x 1.5, clamped to min
  });
});
