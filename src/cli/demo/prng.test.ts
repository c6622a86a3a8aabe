import { describe, expect, it } from 'vitest';
import { Prng } from './prng.js';

describe('Prng', () => {
  it('gives the same sequence for the same seed, another for another seed', () => {
    const a = new Prng(7);
    const b = new Prng(7);
    const c = new Prng(8);
    const seqA = Array.from({ length: 20 }, () => a.next());
    expect(Array.from({ length: 20 }, () => b.next())).toEqual(seqA);
    expect(Array.from({ length: 20 }, () => c.next())).not.toEqual(seqA);
  });

  it('keeps int() inside [lo, hi] and reaches both ends', () => {
    const rng = new Prng(1);
    // Every value seen, asserted once: outside [lo, hi] it would show up in the set.
    const seen = new Set<number>();
    for (let i = 0; i < 10_000; i++) seen.add(rng.int(-2, 2));
    expect(seen).toEqual(new Set([-2, -1, 0, 1, 2]));
  });

  it('chance(0) never and chance(1) always fire; chance(p) is near p', () => {
    const rng = new Prng(3);
    let hits = 0;
    let wrong = 0;
    for (let i = 0; i < 20_000; i++) {
      if (rng.chance(0) || !rng.chance(1)) wrong++;
      if (rng.chance(0.25)) hits++;
    }
    expect(wrong).toBe(0);
    expect(hits / 20_000).toBeGreaterThan(0.23);
    expect(hits / 20_000).toBeLessThan(0.27);
  });
});
