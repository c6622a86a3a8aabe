// Core entry: re-exports only. Core has zero runtime dependencies and never imports an adapter.
export { type Clock, FakeClock, systemClock } from './core/clock.js';
export { type Duration, parseDuration } from './core/duration.js';
export {
  ClockRollbackError,
  ClosedError,
  ErrorCode,
  InvalidArgumentError,
  InvalidDurationError,
  InvalidOptionError,
  isOnceflowError,
  OnceflowError,
  StoreError,
} from './core/errors.js';
export { nextTickAt, type Tick, type Ticker, type TickerOptions, ticker } from './core/ticker.js';
export type { Order } from './core/validate.js';
export { isWindowConfig, type WindowConfig, window } from './core/window-config.js';
export {
  type ApplyResult,
  createLedger,
  type Ledger,
  type LedgerEntry,
  type LedgerOptions,
} from './ledger/ledger.js';
export * from './limiter/index.js';
export {
  defineSignature,
  type FieldType,
  type SignatureFn,
  type SignatureOptions,
  type SignatureSchema,
} from './signature/define-signature.js';
export { type MemoryStoreOptions, memoryStore } from './store/memory-store.js';
export type {
  ApplyOutcome,
  Balances,
  JournalEntry,
  JournalQuery,
  JsonValue,
  LedgerApplyCommand,
  LedgerApplyResult,
  Store,
  WindowState,
} from './store/store.js';
export {
  type AdmitOutcome,
  type SavedWindow,
  SignatureWindow,
  type SignatureWindowOptions,
} from './windows/signature-window.js';
