/**
 * A small seeded pseudo-random generator (mulberry32): 32 bits of state, fast, and the same
 * sequence on every machine, so a demo run is reproducible from its seed alone.
 *
 * Not for cryptography: it only has to make fault injection repeatable.
 *
 * Usage (internal to the CLI):
 *
 *     const rng = new Prng(7);
 *     rng.int(1, 6); // the same die roll on every run with seed 7
 */
export class Prng {
  #state: number;

  /** `seed` is reduced to 32 bits; equal seeds give equal sequences. */
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi], both included (`lo <= hi`). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** True with probability `p` (0 never, 1 always). */
  chance(p: number): boolean {
    return this.next() < p;
  }
}
