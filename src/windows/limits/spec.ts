import { InvalidArgumentError } from '../../core/errors.js';
import { isPlainObject } from '../../core/validate.js';
import { MAX_BLOCK_MS } from './adjust.js';
import type { Algorithm, LimitSpec } from './types.js';

export const ALGORITHMS: readonly Algorithm[] = ['sliding-log', 'sliding-window', 'fixed-window', 'gcra'];

// Products of limit, cost and window run through IEEE doubles in JavaScript and in Lua; they
// stay exact below 2^53. limit x window <= 2^53 keeps every product of the math exact (the
// largest is burst x window in GCRA and limit x granularity in the sliding window).
export const MAX_PRODUCT = Number.MAX_SAFE_INTEGER;
/**
 * A fixed-window counter that never refuses: its limit is the largest whose product with the
 * window stays exact (MAX_PRODUCT / window), far beyond what any client reaches in a window, so
 * every hit is counted (the express-rate-limit and @fastify/rate-limit stores count hits this way
 * and let their middleware decide).
 */
export function hitCounterSpec(id: string, windowMs: number): LimitSpec {
  return Object.freeze({
    id,
    algorithm: 'fixed-window',
    limit: Math.floor(MAX_PRODUCT / windowMs),
    windowMs,
    param: 0,
  });
}

// A sliding log above limit 512 is a sorted set on Redis whose running total is a score at
// 2^52 + total (see time.ts): a larger total would round.
export const MAX_LOG_LIMIT = 2 ** 52;
// Buckets of one sliding window: an hour at 1 s granularity (3,600) fits. A take reads every
// bucket of the window (~0.6 µs of Redis time each: one take on a window of 200,000 buckets,
// called directly as scripts/sliding-log-cost.mjs calls the script, holds Redis ~120 ms by INFO
// commandstats), so this keeps a take under ~2.5 ms of server time; the estimate's error bound is
// already limit / 4096. Finer than that is what the exact sliding log is for.
export const MAX_BUCKETS = 4096;

/**
 * Checks a limit spec as a direct caller of a store's `limiterTake` may have built it (the limiter
 * builds specs with `toSpec` in src/limiter/options.ts, which already holds them to this): every number whole and in the
 * range the math and the Redis script are exact in. A store checks each spec object once.
 */
export function checkSpec(spec: LimitSpec, path: string): void {
  const fail = (name: string, expected: string, got: unknown): never => {
    throw new InvalidArgumentError(`${path}.${name}`, expected, got);
  };
  if (!isPlainObject(spec)) fail('spec', 'a limit spec object', spec);
  if (typeof spec.id !== 'string' || spec.id.length === 0) fail('id', 'a non-empty string', spec.id);
  if (!ALGORITHMS.includes(spec.algorithm))
    fail('algorithm', `one of ${ALGORITHMS.join(', ')}`, spec.algorithm);
  const whole = (name: 'limit' | 'windowMs' | 'param', min: number) => {
    const v = spec[name];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
      fail(name, min === 0 ? 'a non-negative safe integer' : 'a positive safe integer', v);
    }
  };
  whole('limit', 1);
  whole('windowMs', 1);
  whole('param', spec.algorithm === 'sliding-window' || spec.algorithm === 'gcra' ? 1 : 0);
  if (spec.limit * spec.windowMs > MAX_PRODUCT) fail('limit', 'limit x windowMs below 2^53', spec.limit);
  if (spec.algorithm === 'sliding-log' && spec.limit > MAX_LOG_LIMIT)
    fail('limit', 'at most 2^52', spec.limit);
  if (spec.algorithm === 'gcra' && spec.param * spec.windowMs > MAX_PRODUCT) {
    fail('param', 'a burst with burst x windowMs below 2^53', spec.param);
  }
  if (spec.blockMs !== undefined) {
    const b = spec.blockMs;
    if (typeof b !== 'number' || !Number.isSafeInteger(b) || b < 0 || b > MAX_BLOCK_MS)
      fail('blockMs', 'whole milliseconds in [0, 1 year]', b);
  }
  if (
    spec.algorithm === 'sliding-window' &&
    (spec.windowMs % spec.param !== 0 || spec.windowMs / spec.param > MAX_BUCKETS)
  ) {
    fail('param', `a bucket that divides windowMs into at most ${MAX_BUCKETS}`, spec.param);
  }
}
