// The state operations beside a take (DESIGN §3.5; what rate-limiter-flexible calls get, set,
// reward, penalty): pure, on one limit's live state, used by the memory store; the Redis script
// (src/redis/lua/limiter-adjust.lua) and the PostgreSQL function (sql/005-limiter-adjust.sql)
// follow them step for step, and the conformance suite limiter-adjust holds all three to them.
import { InvalidArgumentError } from '../../core/errors.js';
import { MATH } from './algorithms.js';
import type { GcraState } from './gcra.js';
import { floorDiv } from './int-math.js';
import { limiterTime } from './time.js';
import type { LimitSpec } from './types.js';

// Usage x window stays at or below 2^52: every product the math forms from a usage (GCRA's
// cost x window, the sliding window's count x bucket) stays exact in a double, and so does the
// sorted-set log's running total, a score at 2^52 + total (see time.ts). A penalty that would
// pass it is refused: 4.5 x 10^12 points on a 1 s window, 5.2 x 10^7 on a day's, far above any
// limit a window holds (limit x window is below 2^53, the same order).
export const MAX_USAGE_PRODUCT = 2 ** 52;

/** The most usage a limit's state may hold: {@link MAX_USAGE_PRODUCT} / window. */
export function usageCap(spec: LimitSpec): number {
  return Math.floor(MAX_USAGE_PRODUCT / spec.windowMs);
}

// The spec with its capacity (limit, for GCRA the burst) raised to the usage cap: its decision
// at cost 0 answers `cap - used` exactly (no clamp at 0 while used <= cap), and it admits any
// cost that keeps the usage within the cap. Its limit's other fields, and so its state's shape,
// are the spec's.
function capped(spec: LimitSpec): LimitSpec {
  const cap = usageCap(spec);
  return spec.algorithm === 'gcra' ? { ...spec, param: cap } : { ...spec, limit: cap };
}

/**
 * The usage a live state holds at `now`: what the limit counts against its capacity (the
 * current window's count, the sliding estimate rounded up, the log's live total, GCRA's
 * theoretical arrival time ahead of now in emission intervals, rounded up). 0: no state.
 */
export function usageOf(spec: LimitSpec, state: unknown, now: number): number {
  const c = capped(spec);
  return usageCap(spec) - MATH[spec.algorithm].decide(c, state, now, 0).remaining;
}

/**
 * Whether a penalty of `points` keeps the usage within {@link usageCap} (checked for every limit
 * before any is charged: a penalty is all or nothing). Then `commit` charges it whatever the
 * limit: usage may pass the limit.
 */
export function penaltyFits(spec: LimitSpec, state: unknown, now: number, points: number): boolean {
  return MATH[spec.algorithm].decide(capped(spec), state, now, points).allowed;
}

/**
 * The state after giving `points` back (never below no usage): GCRA's arrival time moves back
 * by `points` emission intervals, exactly; every other state is replaced by the usage left,
 * charged at `now` (exact for the fixed window, whose usage lives in the current window; the
 * sliding window and log re-date what is left to `now`, so it counts a full window from now:
 * never less than the exact refund would). `undefined`: nothing left, no state.
 */
export function rewarded(spec: LimitSpec, state: unknown, now: number, points: number): unknown {
  if (spec.algorithm === 'gcra') {
    const s = state as GcraState | undefined;
    if (s === undefined || s.q < now) return undefined;
    const sum = s.f - points * spec.windowMs;
    const carry = floorDiv(sum, spec.limit);
    const q = s.q + carry;
    const f = sum - carry * spec.limit;
    return q < now || (q === now && f === 0) ? undefined : { q, f };
  }
  const left = usageOf(spec, state, now) - points;
  return left > 0 ? MATH[spec.algorithm].commit(spec, undefined, now, left) : undefined;
}

/** The state `set(points)` leaves: `points` charged at `now` on no state (0: no state). */
export function setTo(spec: LimitSpec, now: number, points: number): unknown {
  return points > 0 ? MATH[spec.algorithm].commit(spec, undefined, now, points) : undefined;
}

/** Points of a set, reward or penalty: a safe integer in [0, usage cap of every limit], or a typed error. */
export function checkPoints(points: unknown, specs: readonly LimitSpec[]): number {
  if (typeof points !== 'number' || !Number.isSafeInteger(points) || points < 0) {
    throw new InvalidArgumentError('points', 'a non-negative safe integer', points);
  }
  for (const spec of specs) {
    if (points > usageCap(spec)) {
      throw new InvalidArgumentError(
        'points',
        `at most 2^52 / window (${usageCap(spec)} for ${spec.id})`,
        points,
      );
    }
  }
  return points;
}

// A block lasts at most a year: a block is a cool-down, not a ban list (keep those in a table of
// your own), and a year keeps every block's end a limiter time (see time.ts) for 142,000 years.
export const MAX_BLOCK_MS = 365 * 24 * 3_600_000;

/** A block's length in ms: whole, in [0, a year] (0 lifts a block), or a typed error naming `what`. */
export function checkBlockMs(ms: unknown, what: string): number {
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0 || ms > MAX_BLOCK_MS) {
    throw new InvalidArgumentError(what, 'whole milliseconds in [0, 1 year]', ms);
  }
  return ms;
}

/**
 * A reward's `notAfter` (see LimiterAdjustCommand): a limiter time, given with `reward` only
 * (else a typed error); `undefined` when not given.
 */
export function checkNotAfter(op: string, notAfter: unknown): number | undefined {
  if (notAfter === undefined) return undefined;
  if (op !== 'reward') throw new InvalidArgumentError('notAfter', "absent unless op is 'reward'", notAfter);
  return limiterTime(notAfter, 'notAfter');
}
