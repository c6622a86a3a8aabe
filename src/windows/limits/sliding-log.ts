import type { AlgorithmMath, LimitVerdict } from './types.js';
import { verdict } from './verdict.js';

/**
 * Every admitted request still inside the window: times (ascending) and costs from `head` on,
 * and their total. Two requests in one millisecond are two entries (so are they in the Redis twin:
 * one `time:cost` record each in its string, a unique member each in its sorted set above limit 512).
 * `costs` is `undefined` while every entry costs 1 (the common case: one array per key, not two).
 */
export interface SlidingLogState {
  times: number[];
  costs: number[] | undefined;
  head: number;
  total: number;
}

/**
 * Sliding log: exact. A request at `now` counts until `now + window`; one is admitted iff the
 * cost of the entries younger than the window plus its own is at most `limit`, so no window of
 * that length (anywhere on the time line) ever holds more than `limit` admitted cost. Memory is
 * O(entries in a window), up to `limit` entries: use it for small limits where exactness matters.
 *
 * A clock that steps back behind the newest entry decides and records at that entry's time, as
 * the fixed and bucketed windows stay in their newest window: the log's timeline never moves
 * back, so entries it already dropped stay dropped and the bound holds on it (a request recorded
 * at an earlier time than one already admitted would share a window with entries the later one
 * had pruned). A wait (`retryAfterMs`) still counts from the clock's own reading.
 */
export const slidingLog: AlgorithmMath<SlidingLogState> = {
  decide(spec, state, now, cost): LimitVerdict {
    const W = spec.windowMs;
    const L = spec.limit;
    if (state === undefined) {
      return cost <= L
        ? verdict(spec, true, L - cost, cost > 0 ? now + W : now, 0)
        : verdict(spec, false, L, now, Number.POSITIVE_INFINITY);
    }
    const { times, costs } = state;
    const at = timeOf(state, now);
    const cutoff = at - W; // an entry at t counts while t > at - window
    let live = state.total;
    let i = state.head;
    while (i < times.length && (times[i] as number) <= cutoff) {
      live -= costs === undefined ? 1 : (costs[i] as number);
      i++;
    }
    const newest = i < times.length ? (times[times.length - 1] as number) : undefined;
    if (live + cost <= L) {
      const last = cost > 0 ? at : newest;
      return verdict(spec, true, L - live - cost, last === undefined ? now : last + W, 0);
    }
    let retryAfterMs = Number.POSITIVE_INFINITY;
    if (cost <= L) {
      // Drop the oldest entries until the rest plus this cost fits: the last one dropped decides.
      let freed = 0;
      const need = live + cost - L;
      while (freed < need) {
        freed += costs === undefined ? 1 : (costs[i] as number);
        i++;
      }
      retryAfterMs = (times[i - 1] as number) + W - now;
    }
    // Below 0 only after a penalty (adjust.ts): usage may pass the limit there.
    return verdict(spec, false, Math.max(0, L - live), (newest as number) + W, retryAfterMs);
  },
  commit(spec, state, now, cost) {
    const s = state ?? { times: [], costs: undefined, head: 0, total: 0 };
    const at = timeOf(s, now);
    const cutoff = at - spec.windowMs;
    while (s.head < s.times.length && (s.times[s.head] as number) <= cutoff) {
      s.total -= s.costs === undefined ? 1 : (s.costs[s.head] as number);
      s.head++;
    }
    if (s.head > 32 && s.head * 2 >= s.times.length) {
      // Drop the dead prefix once it is as long as the live part: amortised O(1), memory <= 2x.
      s.times = s.times.slice(s.head);
      if (s.costs !== undefined) s.costs = s.costs.slice(s.head);
      s.head = 0;
    }
    if (cost === 0) return s;
    // The first entry of another cost: from now on every entry has its cost recorded.
    if (cost !== 1 && s.costs === undefined) s.costs = s.times.map(() => 1);
    // Never behind the newest entry (see timeOf): the log stays in time order by appending.
    s.times.push(at);
    s.costs?.push(cost);
    s.total += cost;
    return s;
  },
  expiresAt: (spec, state) =>
    state.head < state.times.length ? (state.times[state.times.length - 1] as number) + spec.windowMs : 0,
};

/** The log's time at `now`: the newest entry's when the clock stands behind it (see slidingLog). */
function timeOf(state: SlidingLogState, now: number): number {
  const newest = state.times.length > state.head ? (state.times[state.times.length - 1] as number) : now;
  return newest > now ? newest : now;
}
