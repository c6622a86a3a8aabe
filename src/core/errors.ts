/**
 * One error family for everything onceflow throws. Expected outcomes (`duplicate`, `stale`,
 * `limited`, `buffered`) are never thrown: they come back as values. An exception means invalid
 * input, a broken store, or a bug.
 *
 * Check errors by `code`, not `instanceof`: two copies of the package in one process (a common
 * result of nested `node_modules`) break `instanceof`, never the code.
 */

import { ErrorCode } from './error-codes.js';
import { clip, describe } from './error-format.js';

export { ErrorCode } from './error-codes.js';
export { describe } from './error-format.js';

/**
 * The base of every error onceflow throws.
 *
 * @example
 * ```ts
 * let caught: unknown;
 * try {
 *   createLedger({ capacity: 0 });
 * } catch (err) {
 *   caught = err;
 * }
 * isOnceflowError(caught, 'ERR_INVALID_OPTION'); // true
 * String(caught); // 'OnceflowError [ERR_INVALID_OPTION]: Expected `capacity` to be a positive safe integer, got `0` (number)'
 * ```
 */
export class OnceflowError extends Error {
  override readonly name = 'OnceflowError' as const;
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }

  /** `OnceflowError [ERR_INVALID_OPTION]: Expected ...`, in the style of Node's own errors. */
  override toString(): string {
    return `${this.name} [${this.code}]: ${this.message}`;
  }
}

/**
 * An option is missing or has the wrong shape; the message names it, what was expected and what was got.
 *
 * @example
 * ```ts
 * let caught;
 * try {
 *   createLimiter({ algorithm: 'gcra', limit: 0, window: '1s' });
 * } catch (err) {
 *   caught = err;
 * }
 * caught.code; // 'ERR_INVALID_OPTION'
 * caught.option; // 'limit'
 * caught.message; // 'Expected `limit` to be a positive safe integer, got `0` (number)'
 * ```
 */
export class InvalidOptionError extends OnceflowError {
  readonly option: string;
  /** What the option should have been, and what it was (the message's parts). */
  readonly expected: string;
  readonly got: unknown;
  constructor(option: string, expected: string, got: unknown) {
    super(ErrorCode.INVALID_OPTION, `Expected \`${option}\` to be ${expected}, got ${describe(got)}`);
    this.option = option;
    this.expected = expected;
    this.got = got;
  }
}

/**
 * An argument is invalid; `path` names the field (for example `deltas.net` or `payload.round`).
 *
 * @example
 * ```ts
 * const ledger = createLedger({ capacity: 4 });
 * const err = await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 1.5 } }).catch((e) => e);
 * err.code; // 'ERR_INVALID_ARGUMENT'
 * err.path; // 'deltas.coins'
 * await ledger.balances('p1'); // {}
 * ```
 */
export class InvalidArgumentError extends OnceflowError {
  readonly path: string;
  constructor(path: string, expected: string, got: unknown) {
    super(ErrorCode.INVALID_ARGUMENT, `Expected \`${path}\` to be ${expected}, got ${describe(got)}`);
    this.path = path;
  }
}

/**
 * A duration could not be read.
 *
 * @example
 * ```ts
 * let caught;
 * try {
 *   parseDuration('soon', 'timeout');
 * } catch (err) {
 *   caught = err;
 * }
 * caught.code; // 'ERR_INVALID_DURATION'
 * caught.option; // 'timeout'
 * parseDuration('1.5s', 'timeout'); // 1500
 * ```
 */
export class InvalidDurationError extends OnceflowError {
  readonly option: string;
  constructor(option: string, got: unknown, why: string) {
    super(
      ErrorCode.INVALID_DURATION,
      `Expected \`${option}\` to be a duration like '250ms', '3s', '1m', '1h' or a number of milliseconds (${why}), got ${describe(got)}`,
    );
    this.option = option;
  }
}

/**
 * What a failed store call may have left behind (see {@link StoreError.outcome}):
 * `'not-applied'` it took no effect; `'unknown'` it may have taken effect, in full or in part.
 */
export type StoreOutcome = 'unknown' | 'not-applied';

/**
 * A store call failed. The driver's error is in `cause`; `outcome` and `retriable` say what is
 * safe to do next.
 *
 * - `outcome: 'not-applied'`: the call took no effect (it never reached the store, such as a
 *   closed client or one that is disconnected and queues nothing, or the store refused it before
 *   changing anything).
 * - `outcome: 'unknown'`: it may have taken effect, wholly or in part: the command was sent and
 *   the connection dropped, the reply was lost, or it timed out (a client may even send it again
 *   once it reconnects). A `ledger.apply` that failed so may well have been applied.
 * - `retriable: true`: the failure is one that passes (a lost connection, a timeout, a server
 *   loading, busy or failing over): trying again, with backoff, may succeed. `false`: it fails the
 *   same way until someone fixes the cause (a closed client, a key of the wrong type, a script
 *   error).
 *
 * For `ledger.apply`, a retry with the **same entry** is always safe, whatever the outcome: if the
 * first attempt was applied, the window answers `duplicate` (or `stale`, once the entry has left
 * the window: `ledger.resolve` tells which), and nothing is booked twice. A new signature for the
 * same event would be booked again: keep the entry.
 *
 * @example
 * ```ts
 * // A store whose server is down (here: a memory store made to fail, from onceflow/testing).
 * const down = wrapStore(memoryStore(), {
 *   limiterTake: () => Promise.reject(new Error('connection refused')),
 * });
 * const limiter = createLimiter({ store: down, algorithm: 'gcra', limit: 5, window: '1s' });
 * const err = await limiter.take('u1').catch((e) => e);
 * err.code; // 'ERR_STORE'
 * err.cause.message; // 'connection refused'
 * // A ledger apply whose reply was lost: it may have happened, and the same entry is safe to send again.
 * const lost = new StoreError('ledgerApply', new Error('Connection is closed.'), { outcome: 'unknown', retriable: true });
 * lost.outcome; // 'unknown'
 * lost.retriable; // true
 * lost.operation; // 'ledgerApply'
 * ```
 */
export class StoreError extends OnceflowError {
  /** The store operation that failed (`'ledgerApply'`, `'limiterTake'`, ...). */
  readonly operation: string;
  /** Whether the call may have taken effect: `'unknown'` unless the store knows it did not. */
  readonly outcome: StoreOutcome;
  /** Whether trying again may succeed (the cause passes): `false` unless the store knows it may. */
  readonly retriable: boolean;
  constructor(
    operation: string,
    cause: unknown,
    facts: { readonly outcome?: StoreOutcome; readonly retriable?: boolean } = {},
  ) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(ErrorCode.STORE, `Store operation \`${operation}\` failed: ${reason}`, { cause });
    this.operation = operation;
    this.outcome = facts.outcome ?? 'unknown';
    this.retriable = facts.retriable ?? false;
  }
}

/**
 * Use after close.
 *
 * @example
 * ```ts
 * const r = await createReorderer({ next: 1, capacity: 10, gapTimeout: '1s', onRelease: () => {} });
 * await r.close();
 * let caught;
 * try {
 *   r.push(1, 'late');
 * } catch (err) {
 *   caught = err;
 * }
 * caught.code; // 'ERR_CLOSED'
 * caught.message; // 'reorderer is closed'
 * ```
 */
export class ClosedError extends OnceflowError {
  constructor(what: string) {
    super(ErrorCode.CLOSED, `${what} is closed`);
  }
}

/**
 * The clock is behind the last timestamp a generator used, by more than it may wait out.
 *
 * @example
 * ```ts
 * const clock = new FakeClock(1_000_000);
 * const ids = new Snowflake({ worker: 1, epoch: 0, clock, lifetime: 0 });
 * ids.next();
 * clock.set(900_000); // 100 s back: far beyond the 5 ms it waits out
 * let caught;
 * try {
 *   ids.next();
 * } catch (err) {
 *   caught = err;
 * }
 * isOnceflowError(caught, 'ERR_CLOCK_ROLLBACK'); // true
 * caught.behindMs; // 100000
 * ```
 */
export class ClockRollbackError extends OnceflowError {
  /** How far (ms) the clock is behind the last timestamp used. */
  readonly behindMs: number;
  constructor(behindMs: number, toleranceMs: number, where: string) {
    super(
      ErrorCode.CLOCK_ROLLBACK,
      `The clock is ${behindMs} ms behind the last timestamp used (${where}); at most ${toleranceMs} ms (\`rollbackToleranceMs\`) is waited out`,
    );
    this.behindMs = behindMs;
  }
}

/**
 * An idempotent call found its key held by another caller whose `fn` is still running (its lease
 * is live): `idempotent()` rejects with it where `run` answers `in-progress`. Retry after
 * `retryAfterMs` (an HTTP handler answers 409 with `Retry-After`).
 *
 * @example
 * ```ts
 * const charge = idempotent(async (order: { id: string }) => {
 *   await new Promise((r) => setTimeout(r, 20));
 *   return 'charged';
 * }, { key: (order) => order.id });
 * const [first, second] = await Promise.allSettled([charge({ id: 'o1' }), charge({ id: 'o1' })]);
 * first.status; // 'fulfilled'
 * second.status === 'rejected' && second.reason.code; // 'ERR_IN_PROGRESS'
 * second.status === 'rejected' && second.reason.retryAfterMs > 0; // true
 * ```
 */
export class InProgressError extends OnceflowError {
  /** The key whose call is in progress. */
  readonly key: string;
  /** How long the holder's lease lasts, ms: the earliest another caller can take the key over. */
  readonly retryAfterMs: number;
  constructor(key: string, retryAfterMs: number) {
    super(
      ErrorCode.IN_PROGRESS,
      `The call with key ${JSON.stringify(clip(key))} is in progress in another caller; retry after ${retryAfterMs} ms`,
    );
    this.key = key;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * An idempotent call reused a key with another payload (its hash differs from the recorded one):
 * `idempotent()` rejects with it where `run` answers `mismatch`; nothing ran. A client bug as a
 * rule (an HTTP handler answers 422).
 *
 * @example
 * ```ts
 * const pay = idempotent(async (req: { key: string; amount: number }) => req.amount, { key: (req) => req.key });
 * await pay({ key: 'k1', amount: 5 }); // 5
 * const err = await pay({ key: 'k1', amount: 7 }).catch((e) => e);
 * err.code; // 'ERR_PAYLOAD_MISMATCH'
 * err.key; // 'k1'
 * ```
 */
export class PayloadMismatchError extends OnceflowError {
  readonly key: string;
  constructor(key: string) {
    super(
      ErrorCode.PAYLOAD_MISMATCH,
      `The key ${JSON.stringify(clip(key))} was used with another payload; nothing ran`,
    );
    this.key = key;
  }
}

/**
 * An idempotent call's `fn` ran and returned, but its holder's lease had run out or been taken
 * over before the result was recorded (the holder stalled longer than the lease, or could not
 * reach the store to renew): **the effect happened**, and another caller may have run `fn` too.
 * The result was not recorded; the caller must know, to reconcile the effect.
 *
 * @example
 * ```ts
 * const clock = new FakeClock(0);
 * const idem = createIdempotency({ store: memoryStore({ clock }), lease: '1s' });
 * const err = await idem
 *   .run({ key: 'k1' }, async () => {
 *     clock.advance(5_000); // the holder stalls past its lease (its renewals come too late)
 *     return 'sent';
 *   })
 *   .catch((e) => e);
 * err.code; // 'ERR_LEASE_LOST'
 * err.key; // 'k1'
 * ```
 */
export class LeaseLostError extends OnceflowError {
  readonly key: string;
  constructor(key: string) {
    super(
      ErrorCode.LEASE_LOST,
      `The lease on key ${JSON.stringify(clip(key))} ran out or was taken over before the result was recorded: fn ran, its result was not recorded`,
    );
    this.key = key;
  }
}

/**
 * An idempotent call's result, serialized, is over `maxResultBytes`: `fn` ran, the record was
 * released (the next call with the key runs `fn` again) and the caller gets this error.
 *
 * @example
 * ```ts
 * const idem = createIdempotency({ maxResultBytes: 16 });
 * const err = await idem.run({ key: 'k1' }, () => 'x'.repeat(100)).catch((e) => e);
 * err.code; // 'ERR_RESULT_TOO_LARGE'
 * err.bytes; // 102
 * err.maxBytes; // 16
 * ```
 */
export class ResultTooLargeError extends OnceflowError {
  readonly key: string;
  /** The serialized result's size in UTF-8 bytes. */
  readonly bytes: number;
  /** The bound it passed (`maxResultBytes`). */
  readonly maxBytes: number;
  constructor(key: string, bytes: number, maxBytes: number) {
    super(
      ErrorCode.RESULT_TOO_LARGE,
      `The result of the call with key ${JSON.stringify(clip(key))} is ${bytes} bytes serialized, over \`maxResultBytes\` (${maxBytes}): fn ran, nothing was recorded`,
    );
    this.key = key;
    this.bytes = bytes;
    this.maxBytes = maxBytes;
  }
}

/**
 * True when `err` is an onceflow error, optionally of one code. Works across package copies.
 *
 * @example
 * ```ts
 * const err = new InvalidOptionError('capacity', 'a positive safe integer', 0);
 * isOnceflowError(err); // true
 * isOnceflowError(err, 'ERR_INVALID_OPTION'); // true
 * isOnceflowError(err, 'ERR_STORE'); // false
 * isOnceflowError(new Error('capacity')); // false
 * // With ERR_STORE it narrows to a StoreError: `outcome` and `retriable` are typed.
 * const lost: unknown = new StoreError('ledgerApply', new Error('reset'), { outcome: 'unknown', retriable: true });
 * isOnceflowError(lost, 'ERR_STORE') && lost.retriable; // true
 * // By shape, not instanceof: an error of another copy of the package passes too.
 * isOnceflowError({ name: 'OnceflowError', code: 'ERR_CLOSED', message: 'x is closed' }, 'ERR_CLOSED'); // true
 * ```
 */
export function isOnceflowError(err: unknown, code: typeof ErrorCode.STORE): err is StoreError;
export function isOnceflowError(err: unknown, code?: ErrorCode): err is OnceflowError;
export function isOnceflowError(err: unknown, code?: ErrorCode): err is OnceflowError {
  return (
    typeof err === 'object' &&
    err !== null &&
    (err as { name?: unknown }).name === 'OnceflowError' &&
    typeof (err as { code?: unknown }).code === 'string' &&
    (code === undefined || (err as { code: unknown }).code === code)
  );
}
