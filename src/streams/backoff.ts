import type { Duration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { timerDuration } from '../core/timer-delay.js';
import { knownKeys, positiveInt } from '../core/validate.js';

/** How a failing call is tried again: at most `attempts` tries in all, waits grow from `base` to `max`. */
export interface RetryOptions {
  /** Tries in all, the first included (1: no retry). */
  attempts?: number;
  /** The cap of the first wait; each further wait's cap doubles. */
  base?: Duration;
  /** No wait is longer than this. */
  max?: Duration;
}

/** {@link RetryOptions} checked, in milliseconds. */
export interface RetryPolicy {
  readonly attempts: number;
  readonly baseMs: number;
  readonly maxMs: number;
}

// 8 tries, 7 waits capped at 50 ms, 100 ms, ..., 3.2 s (5 s would cap an 8th): their worst-case
// sum is 50 * (2^7 - 1) = 6.35 s, the mean half of it (full jitter). That rides out what passes on a healthy deployment (a failover: ~1-5 s of
// CLUSTERDOWN/READONLY; a restart's LOADING of a small dataset; a dropped connection), and
// a publish still gives up within ~7 s of waits, so a caller waiting on it learns of an outage quickly.
export const DEFAULT_RETRY: RetryPolicy = Object.freeze({ attempts: 8, baseMs: 50, maxMs: 5_000 });

/** Checks {@link RetryOptions}; each message names the option, under `prefix` (e.g. `retry.`). */
export function retryPolicy(options: RetryOptions | undefined, prefix = 'retry.'): RetryPolicy {
  if (options === undefined) return DEFAULT_RETRY;
  if (typeof options !== 'object' || options === null)
    throw new InvalidOptionError(prefix.slice(0, -1), 'an object { attempts, base, max }', options);
  knownKeys(prefix.slice(0, -1), options, ['attempts', 'base', 'max']);
  const attempts = positiveInt(`${prefix}attempts`, options.attempts ?? DEFAULT_RETRY.attempts);
  // Each wait is one timer: over 2^31 - 1 ms it would fire at once (a busy retry), so refused.
  const baseMs = timerDuration(`${prefix}base`, options.base ?? DEFAULT_RETRY.baseMs);
  const maxMs = timerDuration(`${prefix}max`, options.max ?? DEFAULT_RETRY.maxMs);
  if (baseMs <= 0) throw new InvalidOptionError(`${prefix}base`, 'a positive duration', options.base);
  if (maxMs < baseMs)
    throw new InvalidOptionError(
      `${prefix}max`,
      `a duration of at least \`${prefix}base\` (${baseMs} ms)`,
      options.max,
    );
  return { attempts, baseMs, maxMs };
}

/**
 * The wait before try `attempt + 1`, after `attempt` tries failed (1-based): exponential backoff
 * with full jitter, a uniform draw in [0, min(max, base * 2^(attempt-1))). Full jitter, not equal
 * or none: many producers that lost the same server retry at spread-out times instead of all at
 * once (a thundering herd that can knock a recovering server down again). `random` returns
 * [0, 1) (Math.random by default): pass a fixed one to test.
 */
export function backoffDelay(
  policy: RetryPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  // 2^(attempt-1) overflows nothing that matters: past ~2^53 the cap is max anyway.
  const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(attempt - 1, 60));
  const r = random();
  // A random outside [0, 1) (a broken injected one) is clamped: a wait is never negative or over the cap.
  return Math.floor(cap * Math.min(Math.max(r, 0), 1 - Number.EPSILON));
}
