import { ErrorCode, OnceflowError, type StoreOutcome } from '../core/errors.js';
import type { DeadLetterReason } from './dead-letter.js';

/** The stream producer's codes, from the one {@link ErrorCode} table. */
export const StreamErrorCode = Object.freeze({
  BACKLOG_FULL: ErrorCode.BACKLOG_FULL,
  PUBLISH_FAILED: ErrorCode.PUBLISH_FAILED,
  DEAD_LETTER_FAILED: ErrorCode.DEAD_LETTER_FAILED,
});

/**
 * A publish was refused at once because the producer's backlog (events accepted and not yet
 * written: Redis is slow or down) is at its bound. Nothing was queued; publish again later, or
 * shed the event.
 *
 * @example
 * ```ts
 * import { BacklogFullError } from 'onceflow/streams';
 * // What publish rejects with when 5 events (1 KiB) wait and the bound is 5 events.
 * const err = new BacklogFullError(5, 1024, 5, 64 << 20);
 * err.code; // 'ERR_BACKLOG_FULL'
 * isOnceflowError(err); // true
 * ```
 */
export class BacklogFullError extends OnceflowError {
  constructor(
    /** Events in the backlog when refused. */
    readonly events: number,
    /** Their bytes (encoded event and id, UTF-8). */
    readonly bytes: number,
    readonly maxEvents: number,
    readonly maxBytes: number,
  ) {
    super(
      StreamErrorCode.BACKLOG_FULL,
      `The producer's backlog is full (${events} of at most ${maxEvents} events, ${bytes} of at most ${maxBytes} bytes: \`backlog.maxEvents\`, \`backlog.maxBytes\`): the publish was refused, nothing was queued`,
    );
  }
}

/**
 * A publish gave up: its tries ran out on passing errors (`reason: 'publish-failed'`) or it met an
 * error no retry fixes (`'terminal-error'`). The event was written to the dead-letter stream as
 * `deadLetterId` (absent when dead letters are off); `cause` is the last error. `outcome`:
 * `'not-applied'` when no try can have written the event to the stream (each was refused unsent,
 * or by the server before it ran), `'unknown'` when one may have (sent, and no answer came; or
 * written by the master and not confirmed by enough replicas): it may be in both streams.
 */
export class PublishFailedError extends OnceflowError {
  constructor(
    readonly id: string,
    readonly reason: DeadLetterReason,
    readonly attempts: number,
    readonly deadLetterStream: string | undefined,
    readonly deadLetterId: string | undefined,
    cause: unknown,
    readonly outcome: StoreOutcome = 'unknown',
  ) {
    super(
      StreamErrorCode.PUBLISH_FAILED,
      `Publishing the event ${JSON.stringify(id)} failed after ${attempts} ${attempts === 1 ? 'try' : 'tries'} (${reason}): ${cause instanceof Error ? cause.message : String(cause)}; ${deadLetterId === undefined ? `dead letters are off: ${outcome === 'unknown' ? 'a try may have written it to the stream' : 'the event is in no stream'}` : `it is in the dead-letter stream ${JSON.stringify(deadLetterStream)} as ${deadLetterId}${outcome === 'unknown' ? ' (and a try may have written it to the stream too)' : ''}`}`,
      { cause },
    );
  }
}

/**
 * A publish gave up and its dead letter could not be written either (Redis down for both): the
 * event is in **neither** stream, and only the caller still has it. `cause` is the dead-letter
 * write's error, `publishError` the publish's last one. `outcome` as {@link PublishFailedError}'s:
 * `'unknown'` when a try may have written it to the stream after all.
 */
export class DeadLetterFailedError extends OnceflowError {
  constructor(
    readonly id: string,
    readonly reason: DeadLetterReason,
    readonly attempts: number,
    readonly deadLetterStream: string,
    readonly publishError: unknown,
    cause: unknown,
    readonly outcome: StoreOutcome = 'unknown',
  ) {
    super(
      StreamErrorCode.DEAD_LETTER_FAILED,
      `Publishing the event ${JSON.stringify(id)} failed after ${attempts} ${attempts === 1 ? 'try' : 'tries'} (${reason}: ${publishError instanceof Error ? publishError.message : String(publishError)}) and writing it to the dead-letter stream ${JSON.stringify(deadLetterStream)} failed too (${cause instanceof Error ? cause.message : String(cause)}): ${outcome === 'unknown' ? 'the event is not in the dead-letter stream, and a try may have written it to the stream' : 'the event is in neither stream'}`,
      { cause },
    );
  }
}
