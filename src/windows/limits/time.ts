import { wholeMs } from '../../core/clock.js';
import { InvalidArgumentError } from '../../core/errors.js';

/**
 * Limiter times are whole milliseconds in [0, 2^52) (Date.now() is ~1.8e12; 2^52 ms is ~142,000
 * years after 1970). The sorted-set sliding log on Redis keeps its totals and times as scores at
 * 2^52 + value, above every entry's time: a time at or past 2^52 would be read as one of them,
 * and a negative one would put its own score below 2^52, among the entries.
 */
export const MAX_LIMITER_TIME = 2 ** 52;

/** A clock reading as a limiter time, or a typed error naming `what`. */
export function limiterTime(reading: unknown, what: string): number {
  const ms = wholeMs(reading, what);
  if (ms >= MAX_LIMITER_TIME || ms < 0) {
    throw new InvalidArgumentError(what, 'whole milliseconds in [0, 2^52) (a limiter time)', reading);
  }
  return ms;
}

// Added to the time a limiter state expires before a store drops it. The math never needs it (a
// state read after its time decides as empty), but a clock that steps back makes an expired state
// count again: a store that had dropped it would forget admissions. On the store's own clock 1 s
// covers rounding and small steps.
export const STATE_SLACK_MS = 1000;
// When callers pass the time in, their clock and the store's differ: NTP-synchronised hosts by
// < 100 ms, and tests that drive Redis and memory with one fake clock that may stand still for as
// long as a test runs (minutes), so 10 minutes. It costs only memory: states outlive their window by it.
export const CLIENT_STATE_SLACK_MS = 600_000;
