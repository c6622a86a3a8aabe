import type { GapRange } from './reorder-types.js';

/** A run of missing numbers, with when its hole opened (the first arrival above it). */
interface MissingRange {
  from: number;
  to: number;
  openedAt: number;
}

/**
 * The exact missing set of a {@link ReorderBuffer}: the numbers it gave up on (reported in gaps)
 * that have not come yet, as ascending, disjoint ranges. Bounded (DESIGN §1 principle 3): past
 * `max` numbers it forgets the oldest, one number at a time, and raises the horizon at or below
 * which an unknown number is `stale` rather than a `duplicate`.
 */
export class MissingSet {
  readonly max: number;
  #ranges: MissingRange[] = [];
  #count = 0;
  #horizon: number | undefined;

  constructor(max: number) {
    this.max = max;
  }

  /** How many numbers are missing. */
  get count(): number {
    return this.#count;
  }

  /** The highest number forgotten to stay within `max`, if any. */
  get horizon(): number | undefined {
    return this.#horizon;
  }

  /** Records `from..to` (above every recorded range), its hole opened at `openedAt`. */
  add(from: number, to: number, openedAt: number): GapRange {
    this.#ranges.push({ from, to, openedAt });
    this.#count += to - from + 1;
    while (this.#count > this.max) {
      const oldest = this.#ranges[0] as MissingRange;
      const drop = Math.min(this.#count - this.max, oldest.to - oldest.from + 1);
      oldest.from += drop;
      this.#count -= drop;
      this.#horizon = oldest.from - 1;
      if (oldest.from > oldest.to) this.#ranges.shift();
    }
    return { from, to };
  }

  /**
   * Removes `seq` when it is missing and answers when its hole opened; `undefined` when it is not
   * missing (never was, came already, or was forgotten: see {@link horizon}).
   */
  take(seq: number): number | undefined {
    const ranges = this.#ranges;
    let lo = 0;
    let hi = ranges.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const range = ranges[mid] as MissingRange;
      if (seq < range.from) hi = mid - 1;
      else if (seq > range.to) lo = mid + 1;
      else {
        if (range.from === range.to) ranges.splice(mid, 1);
        else if (seq === range.from) range.from++;
        else if (seq === range.to) range.to--;
        else {
          ranges.splice(mid + 1, 0, { from: seq + 1, to: range.to, openedAt: range.openedAt });
          range.to = seq - 1;
        }
        this.#count--;
        return range.openedAt;
      }
    }
    return undefined;
  }

  /** The ranges, ascending. */
  ranges(): GapRange[] {
    return this.#ranges.map(({ from, to }) => ({ from, to }));
  }

  /** The ranges with their opening times, as a snapshot keeps them. */
  toJSON(): [number, number, number][] {
    return this.#ranges.map((m) => [m.from, m.to, m.openedAt]);
  }

  /** Replaces the whole set with a validated snapshot's ranges and horizon. */
  load(ranges: readonly (readonly [number, number, number])[], horizon: number | undefined): void {
    this.#ranges = ranges.map(([from, to, openedAt]) => ({ from, to, openedAt }));
    // Each range's size first: `n + to - from + 1` rounds once the sum passes 2^53.
    this.#count = ranges.reduce((n, [from, to]) => n + (to - from + 1), 0);
    this.#horizon = horizon;
  }
}
