import { ceilDiv, floorDiv } from './int-math.js';
import type { AlgorithmMath, LimitVerdict } from './types.js';
import { verdict } from './verdict.js';

/**
 * The theoretical arrival time (TAT) as the exact rational `q + f / limit` milliseconds,
 * 0 <= f < limit: the emission interval `window / limit` is rarely a whole number of
 * milliseconds, and a rounded one drifts (100 per second rounded to 10 ms is exact, 3 per second
 * rounded to 333 ms admits 3.003 per second).
 */
export interface GcraState {
  q: number;
  f: number;
}

/**
 * GCRA (generic cell rate algorithm, as in redis-cell): a rate of `limit` per `window` with a
 * burst of `param` (default `limit`). A request of cost c is admitted iff
 * `max(TAT, now) + c·T − now <= burst·T`, T = window / limit. Exact: in any interval of length d
 * at most `burst + d·limit/window` cost is admitted, and the memory it needs is one number.
 */
export const gcra: AlgorithmMath<GcraState> = {
  decide(spec, state, now, cost): LimitVerdict {
    const { limit: L, windowMs: W, param: burst } = spec;
    // The TAT to start from: the stored one, or now when it lies in the past.
    const live = state !== undefined && state.q >= now;
    const q = live ? state.q : now;
    const f = live ? state.f : 0;
    const sum = f + cost * W;
    const carry = floorDiv(sum, L);
    const q2 = q + carry;
    const f2 = sum - carry * L;
    const ahead = (q2 - now) * L + f2; // how far the new TAT runs ahead of now, in ms x L
    if (ahead <= burst * W) {
      return verdict(
        spec,
        true,
        floorDiv(burst * W - ahead, W),
        cost > 0 ? ceilTime(q2, f2) : ceilTime(q, f),
        0,
      );
    }
    const held = (q - now) * L + f;
    return verdict(
      spec,
      false,
      Math.max(0, floorDiv(burst * W - held, W)),
      ceilTime(q, f),
      // The smallest whole t with TAT + c·T − t <= burst·T, i.e. t >= TAT − (burst − c)·T.
      cost > burst ? Number.POSITIVE_INFINITY : q + ceilDiv(f - (burst - cost) * W, L) - now,
    );
  },
  commit(spec, state, now, cost) {
    const live = state !== undefined && state.q >= now;
    const sum = (live ? state.f : 0) + cost * spec.windowMs;
    const carry = floorDiv(sum, spec.limit);
    const q2 = (live ? state.q : now) + carry;
    const f2 = sum - carry * spec.limit;
    if (state === undefined) return { q: q2, f: f2 };
    state.q = q2;
    state.f = f2;
    return state;
  },
  expiresAt: (_spec, state) => ceilTime(state.q, state.f),
};

function ceilTime(q: number, f: number): number {
  return f > 0 ? q + 1 : q;
}
