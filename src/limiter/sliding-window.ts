import { floorDiv } from './int-math.js';
import type { AlgorithmMath, LimitSpec, Verdict } from './types.js';

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
  decide(spec, state, now, cost): Verdict {
    const G = spec.param;
    const L = spec.limit;
    const view = normalise(spec, state, now);
    const { counts, index: c, time } = view;
    const B = counts.length - 1;
    const r = time - c * G;
    let recent = 0;
    for (let j = 1; j <= B; j++) recent += counts[j] as number;
    const old = counts[0] as number;
    const scaled = G * recent + old * (G - r); // the estimate x G
    if (scaled + cost * G <= L * G) {
      const after = counts.slice();
      after[B] = (after[B] as number) + cost;
      return {
        allowed: true,
        remaining: floorDiv(L * G - scaled - cost * G, G),
        resetAt: resetOf(after, c, G, time),
        retryAfterMs: 0,
      };
    }
    return {
      allowed: false,
      remaining: Math.max(0, floorDiv(L * G - scaled, G)),
      resetAt: resetOf(counts, c, G, time),
      retryAfterMs: cost > L ? Number.POSITIVE_INFINITY : retryAt(counts, c, r, G, L - cost) - now,
    };
  },
  commit(spec, state, now, cost) {
    const view = normalise(spec, state, now);
    const counts = view.counts;
    counts[counts.length - 1] = (counts[counts.length - 1] as number) + cost;
    if (state === undefined) return { index: view.index, counts };
    state.index = view.index;
    state.counts = counts;
    return state;
  },
  expiresAt: (spec, state) => resetOf(state.counts, state.index, spec.param, 0),
};

/** The buckets as seen at `now`: shifted so that the last one is the current bucket. */
function normalise(spec: LimitSpec, state: SlidingWindowState | undefined, now: number) {
  const G = spec.param;
  const B = spec.windowMs / G;
  // A clock that steps back stays in the newest bucket seen (the Lua script does the same).
  const time = state !== undefined && now < state.index * G ? state.index * G : now;
  const index = floorDiv(time, G);
  const counts = new Array<number>(B + 1).fill(0);
  if (state !== undefined) {
    const shift = index - state.index;
    for (let j = shift; j <= B; j++) counts[j - shift] = state.counts[j] as number;
  }
  return { index, counts, time };
}

/** When, with no more requests, the newest non-empty bucket has left the window entirely. */
function resetOf(counts: number[], c: number, G: number, time: number): number {
  for (let j = counts.length - 1; j >= 0; j--) if ((counts[j] as number) > 0) return (c + j + 1) * G;
  return time;
}

/**
 * The first whole millisecond at which the estimate is at most `room` (= limit − cost), with no
 * more requests. Segment s is bucket c + s: there the oldest bucket is counts[s], weighted by
 * (G − r) / G, and the ones after it count fully; the estimate only falls with time.
 */
function retryAt(counts: number[], c: number, r0: number, G: number, room: number): number {
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
