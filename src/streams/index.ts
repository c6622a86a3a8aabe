/**
 * `onceflow/streams`: an exactly-once event pipeline on Redis Streams: a producer that publishes
 * idempotently and dead-letters what it cannot write, a consumer that books each event once
 * (through the ledger or idempotency keys), retention that trims only what every group has
 * acknowledged, and readers of windows and trimmed history. Its errors use the one `ErrorCode`
 * table of `onceflow`. Re-exports only.
 *
 * @module
 */
export type { RetryOptions } from './backoff.js';
export {
  createStreamConsumer,
  type Delivery,
  type StreamClient,
  type StreamConsumer,
  type StreamConsumerEvent,
  type StreamConsumerOptions,
  type StreamConsumerStats,
  type StreamLedgerOptions,
} from './consumer.js';
export {
  type DeadLetter,
  type DeadLetterReason,
  parseDeadLetter,
  writeDeadLetter,
} from './dead-letter.js';
export type { StreamPreCheck, StreamPreCheckEvent } from './pre-check.js';
export { createStreamProducer, type StreamProducer } from './producer.js';
export { BacklogFullError, DeadLetterFailedError, PublishFailedError } from './producer-errors.js';
export type { ProducerEvent, StreamProducerOptions } from './producer-options.js';
export { forgetStreamFeatures, type StreamFeatures, streamFeatures } from './redis-features.js';
export {
  type Retention,
  type RetentionOptions,
  startRetention,
  type TrimResult,
  type TrimStreamOptions,
  trimStream,
} from './retention.js';
export { classifyStreamError, type StreamFailure } from './stream-errors.js';
export { parseStreamId, type StreamId } from './stream-id.js';
export {
  type CheckReaderPositionOptions,
  type CheckTrimmedPastOptions,
  checkReaderPosition,
  checkTrimmedPast,
  type ReaderPosition,
  type TrimmedPastCheck,
  type TrimmedPastEvent,
} from './trimmed-past.js';
export {
  type DecodedWindowEntry,
  type ReadWindowOptions,
  readWindow,
  type StreamWindow,
  type StreamWindowsOptions,
  streamWindows,
  type UndecodableWindowEntry,
  type WindowEntry,
} from './windows.js';
