import type { AlgorithmMath, LimitSpec, LimitVerdict } from './types.js';
import { verdict } from './verdict.js';

/** Count of the current aligned window: `start` is a multiple of the window length. */
export interface FixedWindowState {
  start: number;
  count: number;
}

/**
 * Fixed window: windows aligned on multiples of the length, each admitting `limit` cost. Exact
 * per aligned window; across the edge of two windows up to 2 x `limit` can pass within one window
 * length (the known weakness: use `sliding-log` or `gcra` when that matters).
 */
export const fixedWindow: AlgorithmMath<FixedWindowState> = {
  decide(spec, state, now, cost): LimitVerdict {
    const { start, used, time } = current(spec, state, now);
    const end = start + spec.windowMs;
    if (used + cost <= spec.limit) {
      const after = used + cost;
      return verdict(spec, true, spec.limit - after, after > 0 ? end : time, 0);
    }
    return verdict(
      spec,
      false,
      // Below 0 only after a penalty (adjust.ts): usage may pass the limit there.
      Math.max(0, spec.limit - used),
      used > 0 ? end : time,
      // The next window starts empty, so any cost <= limit passes there and not before.
      cost > spec.limit ? Number.POSITIVE_INFINITY : end - now,
    );
  },
  commit(spec, state, now, cost) {
    const { start, used } = current(spec, state, now);
    if (state === undefined) return { start, count: used + cost };
    state.start = start;
    state.count = used + cost;
    return state;
  },
  expiresAt: (spec, state) => state.start + spec.windowMs,
};

function current(spec: LimitSpec, state: FixedWindowState | undefined, now: number) {
  // A clock that steps back stays in the newest window seen (the Lua script does the same).
  const time = state !== undefined && now < state.start ? state.start : now;
  const start = Math.floor(time / spec.windowMs) * spec.windowMs; // exact: see int-math.ts
  return { start, used: state !== undefined && state.start === start ? state.count : 0, time };
}
