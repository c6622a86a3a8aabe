/**
 * The limiter conformance cases (`limiterTake`, `limiterDelete`, `limiterReset`), as plain data:
 * every store with a limiter must give exactly these verdicts. Times are milliseconds after a base
 * instant the kit picks (aligned to the hour, so every window of these cases starts on it); the
 * kit passes each take's time in the command (`now`), so a store keeping its own clock (Redis
 * `TIME`) is checked at exact window edges with no waiting. `'store'` as a time leaves it to the
 * store's clock.
 */
import type { Algorithm } from '../windows/limits/types.js';

/** One limit of a case, in whole milliseconds. */
export interface LimiterCaseLimit {
  id: string;
  algorithm: Algorithm;
  limit: number;
  windowMs: number;
  /** `sliding-window`: the bucket (default: the window). */
  granularityMs?: number;
  /** `gcra`: the burst (default: `limit`). */
  burst?: number;
  /** How long a refusal of this limit blocks it (`spec.blockMs`; default none). */
  blockMs?: number;
}

/**
 * What one limit must answer; only the fields given are compared. `resetAt` is relative to the
 * base instant (for a take at `'store'`, to the reply's `now`); `'never'` is an infinite wait.
 */
export interface ExpectedVerdict {
  allowed?: boolean;
  remaining?: number;
  resetAt?: number;
  retryAfterMs?: number | 'never';
}

/**
 * What one limit's state must be after an adjust (`delete`: before it); only the fields given are
 * compared. `resetAt` and `blockedUntil` are relative to the base instant; `blockedUntil: 'none'`
 * is not blocked (0).
 */
export interface ExpectedState {
  used?: number;
  remaining?: number;
  resetAt?: number;
  blockedUntil?: number | 'none';
}

/** A number JSON cannot hold, by name. */
export type BadNumber = number | 'NaN' | 'Infinity' | '-Infinity';

/** One step of a limiter case. */
export type LimiterStep =
  | {
      op: 'take';
      /** Milliseconds after the base instant, or `'store'`: the store's own clock. */
      at: number | 'store';
      /** Default 1. */
      cost?: number;
      /** The subject counted (default `'k'`): its own keys, one per limit, in one hash slot. */
      subject?: string;
      /** Another namespace than the case's own (a second limiter), to check a reset keeps it. */
      space?: string;
      expect: { allowed: boolean; verdicts?: ExpectedVerdict[] };
    }
  | {
      op: 'take-invalid';
      at?: number;
      /** What is malformed: the cost, the time, or one field of the first limit's spec. */
      cost?: BadNumber;
      now?: BadNumber;
      spec?: { field: 'limit' | 'windowMs' | 'param' | 'algorithm' | 'id'; value: BadNumber | string };
      code: string;
    }
  | {
      /** While the caller's outage hook holds the store unreachable: the take must fail with `code`. */
      op: 'take-fails';
      at: number;
      cost?: number;
      code: string;
    }
  | { op: 'outage-begin' }
  | { op: 'outage-end' }
  | {
      /** A `limiterAdjust` of every limit (for `block`, of those with `blockMs`, as the limiter sends it). */
      op: 'adjust';
      kind: 'get' | 'delete' | 'set' | 'reward' | 'penalty' | 'block';
      at: number;
      points?: number;
      durationMs?: number;
      /** A reward's deadline, ms after the case's instant as `at` (see LimiterAdjustCommand). */
      notAfter?: number;
      subject?: string;
      /** One state per limit, the fields given compared; or the error code the command rejects with. */
      expect: { states: ExpectedState[] } | { code: string };
    }
  | { op: 'delete'; subject: string; expect: number }
  | { op: 'reset'; space?: string; expect: number };

/** One limiter case: the limits every take of it names, then the steps in order. */
export interface LimiterCase {
  suite: 'limiter' | 'limiter-state' | 'limiter-outage' | 'limiter-adjust';
  name: string;
  /** Which rule of DESIGN §3.5 (or of the Store contract) the case pins down. */
  rule: string;
  limits: LimiterCaseLimit[];
  steps: LimiterStep[];
}

type Take = Extract<LimiterStep, { op: 'take' }>;
const v = (allowed: boolean, remaining: number, resetAt: number, retryAfterMs: number | 'never' = 0) => ({
  allowed,
  remaining,
  resetAt,
  retryAfterMs,
});
/** A take of `cost` at `at` whose every limit answers as listed (allowed iff all of them allow). */
const take = (
  at: number | 'store',
  cost: number,
  verdicts: ExpectedVerdict[],
  extra: Partial<Take> = {},
): Take => ({
  op: 'take',
  at,
  cost,
  ...extra,
  expect: { allowed: verdicts.every((x) => x.allowed !== false), verdicts },
});

/**
 * The cases. Add to them when a rule is added; never edit one to make a store pass. Each verdict
 * is derived in its comment from the algorithm's definition (src/windows/limits/*.ts), not read off a store.
 */
export const limiterCases: readonly LimiterCase[] = deepFreeze<LimiterCase[]>([
  {
    suite: 'limiter',
    name: 'fixed-window-edges',
    rule: 'a fixed window admits `limit` per aligned window; its last millisecond is still in it, the next starts empty',
    limits: [{ id: 'f', algorithm: 'fixed-window', limit: 3, windowMs: 1000 }],
    steps: [
      take(0, 1, [v(true, 2, 1000)]),
      take(999, 2, [v(true, 0, 1000)]),
      // Full at 999: the next window opens in 1 ms.
      take(999, 1, [v(false, 0, 1000, 1)]),
      // A cost of 0 is admitted and shows the state without changing it.
      take(999, 0, [v(true, 0, 1000)]),
      take(1000, 1, [v(true, 2, 2000)]),
      // More than the limit can ever admit at once: refused for good.
      take(1000, 4, [v(false, 2, 2000, 'never')]),
      // 1 used + 3 > 3: refused, and charged nothing (2 still fit after it).
      take(1500, 3, [v(false, 2, 2000, 500)]),
      take(1500, 2, [v(true, 0, 2000)]),
    ],
  },
  {
    suite: 'limiter',
    name: 'sliding-log-edges',
    rule: 'a sliding log counts a request for exactly one window after it; retryAfterMs is when enough entries have left',
    limits: [{ id: 'l', algorithm: 'sliding-log', limit: 3, windowMs: 1000 }],
    steps: [
      take(0, 1, [v(true, 2, 1000)]),
      take(400, 2, [v(true, 0, 1400)]),
      // The entry at 0 still counts at 999 (it leaves at 1000): 1 ms to wait.
      take(999, 1, [v(false, 0, 1400, 1)]),
      take(1000, 1, [v(true, 0, 2000)]),
      // 2 must leave: the entry of cost 2 at 400 does, at 1400.
      take(1000, 2, [v(false, 0, 2000, 400)]),
      take(1399, 2, [v(false, 0, 2000, 1)]),
      // The refusals charged nothing: the cost-0 view still counts 3, newest entry at 1000.
      take(1399, 0, [v(true, 0, 2000)]),
      take(1400, 2, [v(true, 0, 2400)]),
      take(1400, 4, [v(false, 0, 2400, 'never')]),
    ],
  },
  {
    suite: 'limiter',
    name: 'gcra-edges',
    rule: 'GCRA admits a cost iff the theoretical arrival time stays within the burst; waits are exact to the millisecond',
    // T = 1000 / 2 = 500 ms per unit, burst 2.
    limits: [{ id: 'g', algorithm: 'gcra', limit: 2, windowMs: 1000 }],
    steps: [
      take(0, 1, [v(true, 1, 500)]),
      take(0, 1, [v(true, 0, 1000)]),
      // TAT 1000 + 500 would run 1500 ahead of now, burst allows 1000: wait until 500.
      take(0, 1, [v(false, 0, 1000, 500)]),
      take(499, 1, [v(false, 0, 1000, 1)]),
      take(499, 0, [v(true, 0, 1000)]),
      take(500, 1, [v(true, 0, 1500)]),
      take(500, 3, [v(false, 0, 1500, 'never')]),
      // TAT 1500 is past: the bucket is full again at 2000.
      take(2000, 2, [v(true, 0, 3000)]),
    ],
  },
  {
    suite: 'limiter',
    name: 'gcra-fractional-interval',
    rule: 'GCRA keeps the emission interval exact when window / limit is not whole (1000 / 3 ms, never 333)',
    limits: [{ id: 'g3', algorithm: 'gcra', limit: 3, windowMs: 1000 }],
    steps: [
      take(0, 3, [v(true, 0, 1000)]),
      // One unit frees at 1000 / 3 = 333.3 ms: refused at 333, admitted at 334.
      take(333, 1, [v(false, 0, 1000, 1)]),
      take(334, 1, [v(true, 0, 1334)]),
    ],
  },
  {
    suite: 'limiter',
    name: 'sliding-window-edges',
    rule: 'a bucketed sliding window weighs its oldest bucket by the part still inside the window, in whole milliseconds',
    // Buckets of 500 ms: B = 2, the estimate counts buckets c-1 and c, and c-2 weighted (500 - r) / 500.
    limits: [{ id: 'w', algorithm: 'sliding-window', limit: 4, windowMs: 1000, granularityMs: 500 }],
    steps: [
      take(0, 3, [v(true, 1, 1500)]),
      // At 600 bucket 0 (3) counts fully: 3 + 2 > 4. It weighs 3 (500 - r) / 500 <= 2 from r = 167
      // of bucket 2, i.e. at 1167.
      take(600, 2, [v(false, 1, 1500, 567)]),
      take(1166, 2, [v(false, 1, 1500, 1)]),
      take(1166, 0, [v(true, 1, 1500)]),
      take(1167, 2, [v(true, 0, 2500)]),
      take(1167, 5, [v(false, 0, 2500, 'never')]),
    ],
  },
  {
    suite: 'limiter',
    name: 'multi-limit-all-or-nothing',
    rule: 'every limit of a take admits its cost and is charged, or none is: a refusal by one charges none of the others',
    limits: [
      { id: 'second', algorithm: 'fixed-window', limit: 2, windowMs: 1000 },
      { id: 'minute', algorithm: 'sliding-log', limit: 3, windowMs: 60_000 },
    ],
    steps: [
      take(0, 1, [v(true, 1, 1000), v(true, 2, 60_000)]),
      take(100, 1, [v(true, 0, 1000), v(true, 1, 60_100)]),
      // `second` refuses; `minute` answers as to a cost of 0, and is not charged.
      take(200, 1, [v(false, 0, 1000, 800), v(true, 1, 60_100)]),
      take(300, 1, [v(false, 0, 1000, 700), v(true, 1, 60_100)]),
      take(1000, 1, [v(true, 1, 2000), v(true, 0, 61_000)]),
      // Now `minute` refuses (its oldest entry leaves at 60 000) and `second` is not charged.
      take(1100, 1, [v(true, 1, 2000), v(false, 0, 61_000, 58_900)]),
      take(1200, 1, [v(true, 1, 2000), v(false, 0, 61_000, 58_800)]),
      // The entry at 0 leaves the minute at 60 000.
      take(60_000, 1, [v(true, 1, 61_000), v(true, 0, 120_000)]),
      // A cost no limit can ever admit: refused for good, nothing charged anywhere (the entry at
      // 100 has left, so the minute holds 2).
      take(60_100, 4, [v(false, 1, 61_000, 'never'), v(false, 1, 120_000, 'never')]),
    ],
  },
  {
    suite: 'limiter',
    name: 'subjects-independent',
    rule: 'each subject has its own state: one that is refused leaves another untouched',
    limits: [{ id: 'f', algorithm: 'fixed-window', limit: 1, windowMs: 1000 }],
    steps: [
      take(0, 1, [v(true, 0, 1000)], { subject: 'a' }),
      take(0, 1, [v(false, 0, 1000, 1000)], { subject: 'a' }),
      take(0, 1, [v(true, 0, 1000)], { subject: 'b' }),
      take(0, 0, [v(true, 1, 0)], { subject: 'c' }),
    ],
  },
  {
    suite: 'limiter',
    name: 'store-clock',
    rule: "with no time in the command the store decides on its own clock and says when (the reply's now)",
    // Resets relative to the reply's `now`; an hour's window, so no real time passed ends it.
    limits: [{ id: 'h', algorithm: 'fixed-window', limit: 2, windowMs: 3_600_000 }],
    steps: [
      {
        op: 'take',
        at: 'store',
        cost: 2,
        expect: { allowed: true, verdicts: [{ allowed: true, remaining: 0 }] },
      },
      {
        op: 'take',
        at: 'store',
        cost: 1,
        expect: { allowed: false, verdicts: [{ allowed: false, remaining: 0 }] },
      },
    ],
  },
  {
    suite: 'limiter',
    name: 'malformed-take-rejected',
    rule: 'a malformed command is rejected (a promise, never a throw) with a typed error, and charges nothing',
    limits: [{ id: 'f', algorithm: 'fixed-window', limit: 3, windowMs: 1000 }],
    steps: [
      take(0, 1, [v(true, 2, 1000)]),
      { op: 'take-invalid', cost: -1, code: 'ERR_INVALID_ARGUMENT' },
      { op: 'take-invalid', cost: 1.5, code: 'ERR_INVALID_ARGUMENT' },
      { op: 'take-invalid', cost: 'NaN', code: 'ERR_INVALID_ARGUMENT' },
      { op: 'take-invalid', cost: 'Infinity', code: 'ERR_INVALID_ARGUMENT' },
      { op: 'take-invalid', now: -1, code: 'ERR_INVALID_ARGUMENT' },
      { op: 'take-invalid', now: 'Infinity', code: 'ERR_INVALID_ARGUMENT' },
      { op: 'take-invalid', now: 'NaN', code: 'ERR_INVALID_ARGUMENT' },
      { op: 'take-invalid', now: 2 ** 52, code: 'ERR_INVALID_ARGUMENT' },
      { op: 'take-invalid', spec: { field: 'limit', value: 0 }, code: 'ERR_INVALID_ARGUMENT' },
      { op: 'take-invalid', spec: { field: 'windowMs', value: 1.5 }, code: 'ERR_INVALID_ARGUMENT' },
      {
        op: 'take-invalid',
        spec: { field: 'algorithm', value: 'leaky-bucket' },
        code: 'ERR_INVALID_ARGUMENT',
      },
      { op: 'take-invalid', spec: { field: 'id', value: '' }, code: 'ERR_INVALID_ARGUMENT' },
      // Unchanged by all of that.
      take(0, 0, [v(true, 2, 1000)]),
    ],
  },
  {
    suite: 'limiter-state',
    name: 'delete-subject',
    rule: "limiterDelete drops one subject's state (counting the keys that held any) and nothing else",
    limits: [
      { id: 'a', algorithm: 'gcra', limit: 2, windowMs: 1000 },
      { id: 'b', algorithm: 'sliding-window', limit: 2, windowMs: 1000, granularityMs: 100 },
    ],
    steps: [
      take(0, 2, [v(true, 0, 1000), v(true, 0, 1100)], { subject: 'x' }),
      take(0, 1, [v(true, 1, 500), v(true, 1, 1100)], { subject: 'y' }),
      { op: 'delete', subject: 'x', expect: 2 },
      { op: 'delete', subject: 'x', expect: 0 },
      { op: 'delete', subject: 'never-taken', expect: 0 },
      take(10, 2, [v(true, 0, 1010), v(true, 0, 1100)], { subject: 'x' }),
      take(10, 1, [v(true, 0, 1000), v(true, 0, 1100)], { subject: 'y' }),
    ],
  },
  {
    suite: 'limiter-state',
    name: 'reset-namespace',
    rule: "limiterReset drops every state of one namespace (counting the keys) and no other namespace's",
    limits: [
      { id: 'a', algorithm: 'fixed-window', limit: 1, windowMs: 1000 },
      { id: 'b', algorithm: 'sliding-log', limit: 1, windowMs: 1000 },
    ],
    steps: [
      take(0, 1, [v(true, 0, 1000), v(true, 0, 1000)], { subject: 'x' }),
      take(0, 1, [v(true, 0, 1000), v(true, 0, 1000)], { subject: 'y' }),
      take(0, 1, [v(true, 0, 1000), v(true, 0, 1000)], { subject: 'x', space: 'other' }),
      { op: 'reset', expect: 4 },
      { op: 'reset', expect: 0 },
      take(1, 1, [v(true, 0, 1000), v(true, 0, 1001)], { subject: 'x' }),
      take(1, 1, [v(true, 0, 1000), v(true, 0, 1001)], { subject: 'y' }),
      take(1, 1, [v(false, 0, 1000, 999), v(false, 0, 1000, 999)], { subject: 'x', space: 'other' }),
    ],
  },
  {
    suite: 'limiter-outage',
    name: 'unreachable-store-rejects',
    rule: 'a store that cannot reach its state rejects with a StoreError (never a made-up answer), and charges nothing later',
    limits: [{ id: 'f', algorithm: 'fixed-window', limit: 3, windowMs: 60_000 }],
    steps: [
      take(0, 1, [v(true, 2, 60_000)]),
      { op: 'outage-begin' },
      { op: 'take-fails', at: 10, cost: 1, code: 'ERR_STORE' },
      { op: 'take-fails', at: 20, cost: 2, code: 'ERR_STORE' },
      { op: 'outage-end' },
      // What failed while the store was unreachable never reached its state.
      take(30, 0, [v(true, 2, 60_000)]),
      take(40, 2, [v(true, 0, 60_000)]),
    ],
  },
]);

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
