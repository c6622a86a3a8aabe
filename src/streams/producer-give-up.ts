// What a producer does with an event it gives up on (its tries ran out, or a terminal error):
// the dead letter, tried a few times, and the publish's rejection saying where the event went.

import { isClosedClient } from '../redis/store-error.js';
import { backoffDelay } from './backoff.js';
import { type DeadLetterReason, writeDeadLetter } from './dead-letter.js';
import { DeadLetterFailedError, PublishFailedError } from './producer-errors.js';
import type { ProducerConfig, ProducerEvent } from './producer-options.js';
import { classifyStreamError, errorMessage } from './stream-errors.js';

/** One event of a producer's backlog. */
export interface ProducerItem {
  readonly id: string;
  readonly text: string;
  readonly bytes: number;
  /** Tries this event was part of. */
  tries: number;
  firstError: unknown;
  lastError: unknown;
  /** A try of it may have written it: sent, and no answer came (or a script failed part way). */
  mayBeWritten: boolean;
  resolve(entryId: string): void;
  reject(err: unknown): void;
}

// A dead letter is tried this many times (with the producer's backoff) before the publish
// reports it lost to both streams: the publish has already waited out its own retries, so more
// would only hold the backlog; 3 covers a connection dropped once more in between.
const DEAD_LETTER_TRIES = 3;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Gives up on `item` (already out of the backlog's bytes): writes its dead letter when the producer
 * has a dead-letter stream, and rejects its publish with where it went.
 */
export async function giveUp(
  config: ProducerConfig,
  emit: ((event: ProducerEvent) => void) | undefined,
  item: ProducerItem,
  reason: DeadLetterReason,
): Promise<void> {
  const { deadStream } = config;
  if (deadStream === undefined) {
    report(emit, item, reason, undefined);
    item.reject(
      new PublishFailedError(
        item.id,
        reason,
        item.tries,
        undefined,
        undefined,
        item.lastError,
        item.mayBeWritten ? 'unknown' : 'not-applied',
      ),
    );
    return;
  }
  const letter = {
    reason,
    attempts: item.tries,
    firstError: errorMessage(item.firstError),
    lastError: errorMessage(item.lastError),
    origin: config.origin,
    event: item.text,
    id: item.id,
    kind: classifyStreamError(item.lastError).kind,
  };
  let lastDeadError: unknown;
  for (let tryNo = 1; tryNo <= DEAD_LETTER_TRIES; tryNo++) {
    try {
      const deadLetterId = await writeDeadLetter(config.redis, deadStream, letter);
      report(emit, item, reason, deadLetterId);
      item.reject(
        new PublishFailedError(
          item.id,
          reason,
          item.tries,
          deadStream,
          deadLetterId,
          item.lastError,
          item.mayBeWritten ? 'unknown' : 'not-applied',
        ),
      );
      return;
    } catch (err) {
      lastDeadError = err;
      if (!classifyStreamError(err, isClosedClient(config.client as object)).retryable) break;
      if (tryNo < DEAD_LETTER_TRIES) await sleep(backoffDelay(config.retry, tryNo, config.random));
    }
  }
  report(emit, item, reason, undefined);
  item.reject(
    new DeadLetterFailedError(
      item.id,
      reason,
      item.tries,
      deadStream,
      item.lastError,
      lastDeadError,
      item.mayBeWritten ? 'unknown' : 'not-applied',
    ),
  );
}

/** The `dead-lettered` event of `item` (`deadLetterId` undefined when no dead letter was written). */
function report(
  emit: ((event: ProducerEvent) => void) | undefined,
  item: ProducerItem,
  reason: DeadLetterReason,
  deadLetterId: string | undefined,
): void {
  emit?.({
    part: 'stream-producer',
    type: 'dead-lettered',
    id: item.id,
    reason: reason as 'publish-failed',
    attempts: item.tries,
    deadLetterId,
  });
}
