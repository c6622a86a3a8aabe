/** The table of every code onceflow throws: the one place a code is spelled. */

/**
 * Every code onceflow throws, in one table.
 *
 * @example
 * ```ts
 * const ledger = createLedger({ capacity: 4 });
 * const err = await ledger.apply({ owner: '', signature: 's1', deltas: { coins: 5 } }).catch((e) => e);
 * err.code === ErrorCode.INVALID_ARGUMENT; // true
 * ErrorCode.STORE; // 'ERR_STORE'
 * ```
 */
export const ErrorCode = Object.freeze({
  /** An option passed to a factory or constructor is missing or has the wrong shape. */
  INVALID_OPTION: 'ERR_INVALID_OPTION',
  /** An argument of a call (a payload, an entry, a saved window) is invalid. */
  INVALID_ARGUMENT: 'ERR_INVALID_ARGUMENT',
  /** A duration string or number could not be read. */
  INVALID_DURATION: 'ERR_INVALID_DURATION',
  /** The store failed to carry out an operation (driver error in `cause`). */
  STORE: 'ERR_STORE',
  /** The object was closed and cannot be used any more. */
  CLOSED: 'ERR_CLOSED',
  /** The clock went back further than a snowflake generator tolerates (or across a restart). */
  CLOCK_ROLLBACK: 'ERR_CLOCK_ROLLBACK',
  /** An idempotent call's key is held by another caller's live lease (`retryAfterMs` says when it may end). */
  IN_PROGRESS: 'ERR_IN_PROGRESS',
  /** An idempotent call's key was used with another payload. */
  PAYLOAD_MISMATCH: 'ERR_PAYLOAD_MISMATCH',
  /** An idempotent call's `fn` ran, but its lease ran out or was taken over before its result was recorded. */
  LEASE_LOST: 'ERR_LEASE_LOST',
  /** An idempotent call's result is over `maxResultBytes`: `fn` ran, nothing was recorded. */
  RESULT_TOO_LARGE: 'ERR_RESULT_TOO_LARGE',
  /** A stream producer's backlog is full (count or bytes): the publish was refused at once, nothing was queued. */
  BACKLOG_FULL: 'ERR_BACKLOG_FULL',
  /** A publish gave up (tries ran out or a terminal error); the event is in the dead-letter stream. */
  PUBLISH_FAILED: 'ERR_PUBLISH_FAILED',
  /** A publish gave up and writing its dead letter failed too: the event is not in the dead-letter stream, and is in the stream only if a try with `outcome: 'unknown'` wrote it (the error's `outcome` says which). */
  DEAD_LETTER_FAILED: 'ERR_DEAD_LETTER_FAILED',
  /**
   * A Redis write was answered, but fewer replicas than `durability.replicas` confirmed it in time
   * (the `cause` of an ERR_STORE): a failover may still lose it. Retry the same call.
   */
  NOT_REPLICATED: 'ERR_NOT_REPLICATED',
} as const);

/** The union of every code in {@link ErrorCode}. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];
