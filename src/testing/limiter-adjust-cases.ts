/**
 * The `limiter-adjust` cases: `limiterAdjust` (get, delete, set, reward, penalty, block) on every
 * algorithm, and the blocks a refusal of a limit with `blockMs` leaves in later takes. Times as in
 * limiter-cases.ts (ms after an instant aligned to the hour). Each state and verdict is derived in
 * its comment from the definitions (src/windows/limits/adjust.ts and the algorithms), not read off
 * a store.
 */
import {
  deepFreeze,
  type ExpectedState,
  type ExpectedVerdict,
  type LimiterCase,
  type LimiterStep,
} from './limiter-cases.js';

type Adjust = Extract<LimiterStep, { op: 'adjust' }>;
const v = (allowed: boolean, remaining: number, resetAt: number, retryAfterMs: number | 'never' = 0) => ({
  allowed,
  remaining,
  resetAt,
  retryAfterMs,
});
const take = (at: number, cost: number, verdicts: ExpectedVerdict[]): LimiterStep => ({
  op: 'take',
  at,
  cost,
  expect: { allowed: verdicts.every((x) => x.allowed !== false), verdicts },
});
const st = (
  used: number,
  remaining: number,
  resetAt: number,
  blockedUntil: number | 'none' = 'none',
): ExpectedState => ({
  used,
  remaining,
  resetAt,
  blockedUntil,
});
const adjust = (
  kind: Adjust['kind'],
  at: number,
  states: ExpectedState[],
  extra: Partial<Pick<Adjust, 'points' | 'durationMs' | 'notAfter'>> = {},
): Adjust => ({ op: 'adjust', kind, at, ...extra, expect: { states } });
const p = (points: number) => ({ points });
const invalid = (kind: Adjust['kind'], at: number, extra: Partial<Adjust>): Adjust => ({
  op: 'adjust',
  kind,
  at,
  ...extra,
  expect: { code: 'ERR_INVALID_ARGUMENT' },
});

// 2^52 / 1000, floored: the most usage a limit of a 1 s window may hold.
const CAP_1S = 4_503_599_627_370;

export const limiterAdjustCases: readonly LimiterCase[] = deepFreeze<LimiterCase[]>([
  {
    suite: 'limiter-adjust',
    name: 'get-and-delete',
    rule: 'get answers usage 0 for an unknown key and changes nothing; delete answers the state as it was and drops it',
    limits: [{ id: 'f', algorithm: 'fixed-window', limit: 5, windowMs: 1000 }],
    steps: [
      // No state: a take at cost 0 answers remaining 5, resetAt now.
      adjust('get', 100, [st(0, 5, 100)]),
      take(100, 3, [v(true, 2, 1000)]),
      adjust('get', 200, [st(3, 2, 1000)]),
      adjust('delete', 300, [st(3, 2, 1000)]),
      adjust('get', 300, [st(0, 5, 300)]),
      // Nothing left to delete: answered as no state.
      adjust('delete', 300, [st(0, 5, 300)]),
      take(400, 5, [v(true, 0, 1000)]),
    ],
  },
  {
    suite: 'limiter-adjust',
    name: 'fixed-window-adjust',
    rule: 'penalty charges past the limit, reward gives back (never below 0), set replaces: all in the current aligned window',
    limits: [{ id: 'f', algorithm: 'fixed-window', limit: 5, windowMs: 1000 }],
    steps: [
      take(0, 3, [v(true, 2, 1000)]),
      // 3 + 4 = 7 > 5: remaining answers 0, never below.
      adjust('penalty', 100, [st(7, 0, 1000)], p(4)),
      take(200, 1, [v(false, 0, 1000, 800)]),
      adjust('reward', 300, [st(2, 3, 1000)], p(5)),
      take(400, 3, [v(true, 0, 1000)]),
      adjust('set', 500, [st(1, 4, 1000)], p(1)),
      adjust('set', 600, [st(0, 5, 600)], p(0)),
      adjust('reward', 700, [st(0, 5, 700)], p(10)),
      adjust('penalty', 999, [st(2, 3, 1000)], p(2)),
      // The next window starts empty.
      adjust('get', 1000, [st(0, 5, 1000)]),
    ],
  },
  {
    suite: 'limiter-adjust',
    name: 'reward-not-after',
    rule: 'a reward with notAfter gives back only while the operation time is before it; at or after it nothing changes (answered as a get)',
    limits: [{ id: 'f', algorithm: 'fixed-window', limit: 5, windowMs: 1000 }],
    steps: [
      take(0, 4, [v(true, 1, 1000)]),
      // 500 is not before 500: nothing given back, the state as a get answers it.
      adjust('reward', 500, [st(4, 1, 1000)], { points: 2, notAfter: 500 }),
      adjust('reward', 499, [st(2, 3, 1000)], { points: 2, notAfter: 500 }),
      // Sliding windows and logs are the same check; the next window starts empty either way.
      adjust('reward', 1000, [st(0, 5, 1000)], { points: 1, notAfter: 2000 }),
      invalid('get', 600, { notAfter: 700 }),
      invalid('penalty', 600, { points: 1, notAfter: 700 }),
    ],
  },
  {
    suite: 'limiter-adjust',
    name: 'gcra-adjust',
    rule: "GCRA's penalty and reward move the theoretical arrival time by points x window / limit, exactly",
    // T = 1000 / 10 = 100 ms per unit, burst 10.
    limits: [{ id: 'g', algorithm: 'gcra', limit: 10, windowMs: 1000 }],
    steps: [
      take(0, 4, [v(true, 6, 400)]),
      adjust('get', 0, [st(4, 6, 400)]),
      // TAT 400 + 10 x 100 = 1400: 14 units ahead, past the burst of 10.
      adjust('penalty', 0, [st(14, 0, 1400)], p(10)),
      // 1 more fits once TAT - now <= 9 units: at 1400 - 900 = 500.
      take(0, 1, [v(false, 0, 1400, 500)]),
      // TAT 1400 - 300 = 1100: 10 units ahead of 100.
      adjust('reward', 100, [st(10, 0, 1100)], p(3)),
      take(100, 1, [v(false, 0, 1100, 100)]),
      // More than is held: back to no usage (TAT not behind now).
      adjust('reward', 100, [st(0, 10, 100)], p(20)),
      take(100, 10, [v(true, 0, 1100)]),
    ],
  },
  {
    suite: 'limiter-adjust',
    name: 'sliding-log-adjust',
    rule: 'a sliding log: penalty is one entry of its points; reward and set leave the usage left as one entry dated now',
    limits: [{ id: 'l', algorithm: 'sliding-log', limit: 5, windowMs: 1000 }],
    steps: [
      take(0, 1, [v(true, 4, 1000)]),
      take(100, 1, [v(true, 3, 1100)]),
      take(200, 1, [v(true, 2, 1200)]),
      // 3 - 1 = 2 left, as one entry at 300: it counts until 1300.
      adjust('reward', 300, [st(2, 3, 1300)], p(1)),
      adjust('get', 1000, [st(2, 3, 1300)]),
      adjust('get', 1300, [st(0, 5, 1300)]),
      adjust('penalty', 1400, [st(7, 0, 2400)], p(7)),
      // 7 + 1 - 5 = 3 must leave: the entry of 7 at 1400 does, at 2400.
      take(1500, 1, [v(false, 0, 2400, 900)]),
      adjust('set', 1600, [st(2, 3, 2600)], p(2)),
      take(1600, 3, [v(true, 0, 2600)]),
    ],
  },
  {
    suite: 'limiter-adjust',
    name: 'sliding-log-large-adjust',
    rule: 'a sliding log above limit 512 (a sorted set on Redis) adjusts as the small one does',
    limits: [{ id: 'z', algorithm: 'sliding-log', limit: 600, windowMs: 1000 }],
    steps: [
      take(0, 500, [v(true, 100, 1000)]),
      adjust('penalty', 100, [st(700, 0, 1100)], p(200)),
      // 700 + 1 - 600 = 101 must leave: the entry of 500 at 0 does, at 1000.
      take(200, 1, [v(false, 0, 1100, 800)]),
      // 700 - 300 = 400 left, dated 300.
      adjust('reward', 300, [st(400, 200, 1300)], p(300)),
      take(300, 200, [v(true, 0, 1300)]),
      adjust('get', 1300, [st(0, 600, 1300)]),
    ],
  },
  {
    suite: 'limiter-adjust',
    name: 'sliding-window-adjust',
    rule: 'a sliding window: penalty adds to the current bucket; reward leaves the estimate left (rounded up) in it',
    // Buckets of 500 ms, B = 2.
    limits: [{ id: 'w', algorithm: 'sliding-window', limit: 10, windowMs: 1000, granularityMs: 500 }],
    steps: [
      take(0, 4, [v(true, 6, 1500)]),
      // Bucket 0 holds 12: the estimate is 12 while it is fully inside the window.
      adjust('penalty', 100, [st(12, 0, 1500)], p(8)),
      // At 600 bucket 0 still counts fully (12); it weighs 12 (500 - r) / 500 <= 9 from r = 125
      // of bucket 2, i.e. at 1125.
      take(600, 1, [v(false, 0, 1500, 525)]),
      // 12 - 4 = 8 left, in bucket 1 (at 600): it leaves the window at 2000.
      adjust('reward', 600, [st(8, 2, 2000)], p(4)),
      take(600, 2, [v(true, 0, 2000)]),
    ],
  },
  {
    suite: 'limiter-adjust',
    name: 'block-after-refusal',
    rule: 'a refusal of a limit with blockMs blocks it for that long, on the store: every take is refused until then; a cost above the limit blocks nothing',
    limits: [{ id: 'b', algorithm: 'fixed-window', limit: 1, windowMs: 1000, blockMs: 5000 }],
    steps: [
      take(0, 1, [v(true, 0, 1000)]),
      // Refused (900 ms to the next window) and blocked until 100 + 5000.
      take(100, 1, [v(false, 0, 5100, 5000)]),
      adjust('get', 200, [st(1, 0, 1000, 5100)]),
      // A new window, still blocked.
      take(1500, 1, [v(false, 0, 5100, 3600)]),
      take(5099, 1, [v(false, 0, 5100, 1)]),
      take(5100, 1, [v(true, 0, 6000)]),
      take(5100, 2, [v(false, 0, 6000, 'never')]),
      adjust('get', 5100, [st(1, 0, 6000, 'none')]),
      take(6000, 1, [v(true, 0, 7000)]),
    ],
  },
  {
    suite: 'limiter-adjust',
    name: 'block-operation',
    rule: 'block sets (or with 0 lifts) a block whatever was set; only limits with blockMs read it; delete drops blocks',
    limits: [
      { id: 'b', algorithm: 'fixed-window', limit: 5, windowMs: 1000, blockMs: 1000 },
      { id: 'p', algorithm: 'gcra', limit: 100, windowMs: 1000 },
    ],
    steps: [
      // Only 'b' is given to a block (see the kit's adjust step).
      adjust('block', 0, [st(0, 5, 0, 2000)], { durationMs: 2000 }),
      // 'p' admits and answers at cost 0 (nothing was charged).
      take(500, 1, [v(false, 0, 2000, 1500), v(true, 100, 500)]),
      adjust('block', 600, [st(0, 5, 600, 'none')], { durationMs: 0 }),
      // 'p': TAT 600 + 10.
      take(600, 1, [v(true, 4, 1000), v(true, 99, 610)]),
      adjust('block', 700, [st(1, 4, 1000, 3700)], { durationMs: 3000 }),
      adjust('delete', 800, [st(1, 4, 1000, 3700), st(0, 100, 800, 'none')]),
      take(900, 1, [v(true, 4, 1000), v(true, 99, 910)]),
    ],
  },
  {
    suite: 'limiter-adjust',
    name: 'adjust-keeps-what-a-step-back-reads',
    rule: 'a penalty of 0 writes nothing, and a reward or set leaves a block in place: a clock that steps back finds the state and block a take would',
    limits: [
      { id: 'l', algorithm: 'sliding-log', limit: 1, windowMs: 1000 },
      { id: 'b', algorithm: 'fixed-window', limit: 1, windowMs: 1000, blockMs: 700 },
    ],
    steps: [
      take(0, 1, [v(true, 0, 1000), v(true, 0, 1000)]),
      // At 1000 the log's entry at 0 has left its window: no usage.
      adjust('penalty', 1000, [st(0, 1, 1000), st(0, 1, 1000)], p(0)),
      // One ms back, the entry at 0 counts again (it leaves at 1000).
      take(999, 0, [v(true, 0, 1000), v(true, 0, 1000)]),
      // 'l' refuses too (its entry counts until 1000); 'b' refuses and blocks until 999 + 700.
      take(999, 1, [v(false, 0, 1000, 1), v(false, 0, 1699, 700)]),
      adjust('block', 999, [st(1, 0, 1000, 2500)], { durationMs: 1501 }),
      // At 2500 the block has ended and the window is new; the reward empties nothing, keeps the block.
      adjust('reward', 2500, [st(0, 1, 2500), st(0, 1, 2500, 'none')], p(0)),
      // Back at 1500: still blocked until 2500.
      take(1500, 0, [v(true, 1, 1500), v(false, 0, 2500, 1000)]),
    ],
  },
  {
    suite: 'limiter-adjust',
    name: 'adjust-invalid',
    rule: 'malformed points or durations, and a penalty past usage x window = 2^52, reject and change nothing (on any limit)',
    limits: [
      { id: 's', algorithm: 'fixed-window', limit: 5, windowMs: 1000, blockMs: 1000 },
      { id: 'ms', algorithm: 'fixed-window', limit: 5, windowMs: 1 },
    ],
    steps: [
      take(0, 2, [v(true, 3, 1000), v(true, 3, 1)]),
      invalid('penalty', 0, { points: -1 }),
      invalid('reward', 0, { points: 1.5 }),
      invalid('set', 0, { points: CAP_1S + 1 }),
      invalid('block', 0, { durationMs: -5 }),
      // Fits 'ms' (cap 2^52) but not 's' (2 + CAP_1S - 1 > CAP_1S): neither is charged.
      invalid('penalty', 0, { points: CAP_1S - 1 }),
      adjust('get', 0, [st(2, 3, 1000), st(2, 3, 1)]),
      adjust('penalty', 0, [st(CAP_1S, 0, 1000), st(CAP_1S, 0, 1)], p(CAP_1S - 2)),
    ],
  },
]);
