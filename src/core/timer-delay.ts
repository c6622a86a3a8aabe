import { type Duration, parseDuration } from './duration.js';
import { InvalidOptionError } from './errors.js';

// The largest delay setTimeout and setInterval honour: 2^31 - 1 ms (~24.8 days, a signed 32-bit
// count of ms). Above it Node prints a TimeoutOverflowWarning and fires after 1 ms instead, so a
// long wait becomes a busy loop.
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A delay for setTimeout/setInterval: `ms` clamped to [0, 2^31 - 1]. A wait longer than that
 * fires early, and the caller, which compares times on each firing, simply waits again.
 */
export function timerDelay(ms: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(0, ms));
}

/**
 * A duration option that a single timer waits out (a timeout, a retry delay): parsed, and refused
 * by name above {@link MAX_TIMER_MS}, where the timer would fire at once instead.
 */
export function timerDuration(option: string, value: Duration): number {
  const ms = parseDuration(value, option);
  if (ms > MAX_TIMER_MS) {
    throw new InvalidOptionError(option, 'a duration of at most 2^31 - 1 ms (~24.8 days)', value);
  }
  return ms;
}
