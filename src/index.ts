/**
 * `onceflow`: exactly-once effects in one process or on any store: signature windows and the
 * ledger, rate limits, ordering (reorder buffers, version gates, snowflakes), idempotent calls, a penetration guard
 * for lookups (with a Bloom filter),
 * the memory store and the errors all of them throw. Zero runtime dependencies; adapters live in
 * `onceflow/redis`, `onceflow/postgres` and `onceflow/streams`, the types a store implementer
 * needs in `onceflow/store`, the conformance kit and fault helpers in `onceflow/testing`.
 * Re-exports only.
 *
 * @module
 */
export { type Clock, FakeClock, systemClock } from './core/clock.js';
export { type Duration, parseDuration } from './core/duration.js';
export {
  ClockRollbackError,
  ClosedError,
  ErrorCode,
  InProgressError,
  InvalidArgumentError,
  InvalidDurationError,
  InvalidOptionError,
  isOnceflowError,
  LeaseLostError,
  OnceflowError,
  PayloadMismatchError,
  ResultTooLargeError,
  StoreError,
  type StoreOutcome,
} from './core/errors.js';
export { LIMITS, type LimitName } from './core/limits.js';
export type {
  AdaptiveTimeoutEvent,
  CompensatorEvent,
  EventShape,
  GuardGetEvent,
  GuardStateEvent,
  IdempotencyLeaseLostEvent,
  IdempotencyPreCheckEvent,
  IdempotencyRunEvent,
  LedgerApplyEvent,
  LedgerPreCheckEvent,
  LedgerResolveEvent,
  LimiterDecisionEvent,
  LimiterDegradedEvent,
  LimiterDeviationEvent,
  LimiterLeaseEvent,
  ObservedDecisionReason,
  ObservedStoreOutcome,
  Observer,
  OnceflowEvent,
  PreCheckOutcome,
  ReorderGapEvent,
  ReorderPushEvent,
  SnowflakeEvent,
  StoreCallEvent,
  VersionGateEvent,
} from './core/observer.js';
export { nextTickAt, type Tick, type Ticker, type TickerOptions, ticker } from './core/ticker.js';
export type { Order } from './core/validate.js';
export { type WindowConfig, window } from './core/window-config.js';
export * from './guard/index.js';
export * from './idempotency/index.js';
export {
  type ApplyResult,
  createLedger,
  type Ledger,
  type LedgerEntry,
  type LedgerOptions,
  type ResolveResult,
} from './ledger/ledger.js';
export type { SeenQuery } from './ledger/pre-check.js';
export * from './limiter/index.js';
export {
  type Compensator,
  type CompensatorOptions,
  type CompensatorStats,
  createCompensator,
} from './ordering/compensator.js';
export { createReorderer, type Reorderer, type ReordererOptions } from './ordering/reorderer.js';
export { type GuardDecision, SequenceGuard, type SequenceGuardOptions } from './ordering/sequence-guard.js';
export { type DecodedSnowflake, Snowflake, type SnowflakeOptions } from './ordering/snowflake.js';
export { VersionGate, type VersionGateOptions, type VersionGateResult } from './ordering/version-gate.js';
export {
  defineSignature,
  type FieldType,
  type SignatureFn,
  type SignatureOptions,
  type SignatureSchema,
} from './signature/define-signature.js';
export {
  DEFAULT_JOURNAL_ENTRIES,
  type MemoryStoreOptions,
  memoryStore,
} from './store/memory/memory-store.js';
export { observeStore } from './store/observe-store.js';
// The results of ledger calls and the store a caller passes; the rest of the store contract is in
// onceflow/store.
export type { Balances, JournalEntry, JournalQuery, JsonValue, Store, WindowState } from './store/store.js';
export {
  AdaptiveTimeout,
  type AdaptiveTimeoutOptions,
  type AdaptiveTimeoutStats,
  type SavedAdaptiveTimeout,
} from './windows/adaptive-timeout.js';
export {
  BloomFilter,
  type BloomFilterOptions,
  bloomBits,
  MAX_BLOOM_BYTES,
  MAX_BLOOM_KEY_LENGTH,
  type SavedBloomFilter,
} from './windows/bloom-filter.js';
export {
  type GapRange,
  type PushOutcome,
  type PushResult,
  type Release,
  ReorderBuffer,
  type ReorderBufferOptions,
  type ReorderStats,
  type SavedReorderBuffer,
  type TickResult,
} from './windows/reorder-buffer.js';
export { type SavedSeenFilter, SeenFilter, type SeenFilterOptions } from './windows/seen-filter.js';
export {
  type AdmitOutcome,
  type SavedWindow,
  SignatureWindow,
  type SignatureWindowOptions,
} from './windows/signature-window.js';
