import type { Duration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { timerDuration } from '../core/timer-delay.js';

/**
 * The longest a store call waits for PostgreSQL by default: for a client from the pool, for its
 * statement's answer, and for the migration that comes first. A store statement takes
 * milliseconds and a checkout waits only for other statements to end, so 10 s is two orders of
 * magnitude above a slow answer from a loaded server (~100 ms) and below the ~30 s an HTTP
 * client commonly waits: a caller learns that the server is gone while its own caller listens.
 */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** The `timeout` option: a positive duration a timer can wait out; the default when absent. */
export function checkTimeout(option: string, value: unknown): number {
  if (value === undefined) return DEFAULT_TIMEOUT_MS;
  if (value === null) throw new InvalidOptionError(option, 'a positive duration (`10s`, 5000)', value);
  const ms = timerDuration(option, value as Duration);
  if (ms <= 0) throw new InvalidOptionError(option, 'a positive duration (`10s`, 5000)', value);
  return ms;
}

/**
 * What a wait that ran out rejects with (the `cause` of the StoreError the caller gets): no
 * SQLSTATE, so pg-error.ts counts the connection as lost, the client is destroyed, and a write's
 * outcome is unknown (the statement may still run and commit).
 */
export class PgTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/** One call's time limit: its `timeout` in ms, and when it ends (a `performance.now()` time). */
export interface Deadline {
  readonly timeoutMs: number;
  readonly at: number;
}

/** A deadline `timeoutMs` from now. */
export function deadlineIn(timeoutMs: number): Deadline {
  return { timeoutMs, at: performance.now() + timeoutMs };
}

/** Whether any time is left before `deadline`. */
export function timeLeft(deadline: Deadline): boolean {
  return deadline.at > performance.now();
}

/**
 * `promise`, or a rejection with {@link PgTimeoutError} saying `what` when it has not settled
 * before `deadline`. A promise that settles later is absorbed (its rejection is no unhandled
 * one), and `late` gets its value, so a client that arrives after its caller gave up is returned.
 */
export function within<T>(
  promise: Promise<T>,
  deadline: Deadline,
  what: string,
  late?: (value: T) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const ms = Math.max(0, Math.ceil(deadline.at - performance.now()));
    const timer = setTimeout(() => {
      done = true;
      reject(new PgTimeoutError(`${what} within ${deadline.timeoutMs} ms (the \`timeout\` option)`));
    }, ms);
    promise.then(
      (value) => {
        if (done) {
          late?.(value);
          return;
        }
        done = true;
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
