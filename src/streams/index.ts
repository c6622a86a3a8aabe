// onceflow/streams: an exactly-once event pipeline on Redis Streams. Re-exports only.
export { backoffDelay, type RetryOptions, retryPolicy } from './backoff.js';
export {
  DEAD_LETTER_ERROR_BYTES,
  type DeadLetter,
  type DeadLetterReason,
  deadLetterFields,
  parseDeadLetter,
  writeDeadLetter,
} from './dead-letter.js';
export { createStreamProducer, type StreamProducer } from './producer.js';
export {
  BacklogFullError,
  DeadLetterFailedError,
  PublishFailedError,
  StreamErrorCode,
} from './producer-errors.js';
export type { ProducerEvent, StreamProducerOptions } from './producer-options.js';
export { detectIdempotentXadd } from './redis-features.js';
export { classifyStreamError, type StreamFailure } from './stream-errors.js';
