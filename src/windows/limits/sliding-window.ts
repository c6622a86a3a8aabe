import { floorDiv } from './int-math.js';
import type { AlgorithmMath, LimitSpec, LimitVerdict } from './types.js';
import { verdict } from './verdict.js';

/**
 * Bucket counts: `counts[B]` is bucket `index` (the newest written), `counts[B - j]` bucket
 * `index - j`; B = window / granularity, so B + 1 buckets (2 for the classic estimate).
 */
export interface SlidingWindowState {
  index: number;
  counts: number[];
}

/**
 * Sliding window, bucketed counter. Time is cut into buckets of the granularity G; the window
 * (now − W, now] covers the B = W / G newest buckets fully and the oldest one partly. The
 * estimate counts the full buckets and the oldest bucket weighted by the part of it still inside
 * the window, `(G − now mod G) / G`, as if its requests were spread evenly. With G = W this is
 * the classic two-counter estimate (Cloudflare, upstash/ratelimit).
 *
 * Error bound: the estimate differs from the true count in the window by less than the oldest
 * bucket's count. So in any window the admitted cost is at most `limit + floor(b·r / G)` where b
 * is the oldest bucket's cost and r the position in the current bucket (`< limit + b`); under even
 * traffic b ≈ limit·G/W, so finer buckets give a smaller error. Exactness costs `sliding-log`.
 *
 * All arithmetic is integer (scaled by G), so Redis and memory decide identically.
 */
export const slidingWindow: AlgorithmMath<SlidingWindowState> = {
  decide(spec, state, now, cost): LimitVerdict {
    const G = spec.param;
    const L = spec.limit;
    // The buckets as seen at `now`, read in place (no copy): bucket j of the view is
    // state.counts[j + shift], or 0 past the end (see `viewOf`).
    const time = timeOf(spec, state, now);
    const c = floorDiv(time, G);
    const counts = viewOf(spec, state, c);
    const B = counts.length - 1;
    const r = time - c * G;
    let recent = 0;
    for (let j = 1; j <= B; j++) recent += counts[j] as number;
    const old = counts[0] as number;
    const scaled = G * recent + old * (G - r); // the estimate x G
    if (scaled + cost * G <= L * G) {
      return verdict(
        spec,
        true,
        floorDiv(L * G - scaled - cost * G, G),
        cost > 0 ? (c + B + 1) * G : resetOf(counts, c, G, time),
        // With the cost added to the newest bucket: that bucket decides the reset when it is > 0.
        0,
      );
    }
    return verdict(
      spec,
      false,
      Math.max(0, floorDiv(L * G - scaled, G)),
      resetOf(counts, c, G, time),
      cost > L ? Number.POSITIVE_INFINITY : retryAt(counts, c, r, G, L - cost) - now,
    );
  },
  commit(spec, state, now, cost) {
    const G = spec.param;
    const B = spec.windowMs / G;
    const index = floorDiv(timeOf(spec, state, now), G);
    if (state === undefined) {
      const counts = new Array<number>(B + 1).fill(0);
      counts[B] = cost;
      return { index, counts };
    }
    // Shifted in place (shift >= 0: time never goes below the newest bucket seen).
    const counts = state.counts;
    const shift = index - state.index;
    if (shift > 0) {
      for (let j = 0; j <= B; j++) counts[j] = j + shift <= B ? (counts[j + shift] as number) : 0;
      state.index = index;
    }
    counts[B] = (counts[B] as number) + cost;
    return state;
  },
  expiresAt: (spec, state) => resetOf(state.counts, state.index, spec.param, 0),
};

/** The time the decision is made at: a clock that steps back stays in the newest bucket seen (as the Lua script does). */
function timeOf(spec: LimitSpec, state: SlidingWindowState | undefined, now: number): number {
  return state !== undefined && now < state.index * spec.param ? state.index * spec.param : now;
}

/**
 * The buckets at bucket index `c`, last one current: the state's own array when it is already
 * current (the common case for a busy key: no copy), else a shifted copy (all zeros without state).
 */
function viewOf(spec: LimitSpec, state: SlidingWindowState | undefined, c: number): readonly number[] {
  const B = spec.windowMs / spec.param;
  if (state !== undefined && c === state.index) return state.counts;
  const counts = new Array<number>(B + 1).fill(0);
  if (state !== undefined) {
    const shift = c - state.index;
    for (let j = shift; j <= B; j++) counts[j - shift] = state.counts[j] as number;
  }
  return counts;
}

/** When, with no more requests, the newest non-empty bucket has left the window entirely. */
function resetOf(counts: readonly number[], c: number, G: number, time: number): number {
  for (let j = counts.length - 1; j >= 0; j--) if ((counts[j] as number) > 0) return (c + j + 1) * G;
  return time;
}

/**
 * The first whole millisecond at which the estimate is at most `room` (= limit − cost), with no
 * more requests. Segment s is bucket c + s: there the oldest bucket is counts[s], weighted by
 * (G − r) / G, and the ones after it count fully; the estimate only falls with time.
 */
function retryAt(counts: readonly number[], c: number, r0: number, G: number, room: number): number {
  const B = counts.length - 1;
  let recent = 0;
  for (let j = 1; j <= B; j++) recent += counts[j] as number;
  for (let s = 0; ; s++) {
    const old = s <= B ? (counts[s] as number) : 0;
    const start = s === 0 ? r0 : 0;
    const slack = room * G - G * recent;
    if (slack >= 0) {
      // old·(G − r) <= slack  <=>  r >= G − floor(slack / old)
      const r = old === 0 ? start : Math.max(start, G - floorDiv(slack, old));
      if (r <= G - 1) return (c + s) * G + r;
    }
    if (s + 1 <= B) recent -= counts[s + 1] as number;
  }
}
