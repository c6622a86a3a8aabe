/**
 * `onceflow/store`: the contract a store implements, for a third party writing one: the `Store`
 * interface (one atomic, semantic operation per method), the command and reply types of each
 * capability (the ledger required; rate limits, ordering and idempotency records optional), and
 * the errors a store throws. A store written against these types passes the conformance kit of
 * `onceflow/testing`; docs/testing.md ("Write your own store") shows one. Types and errors only:
 * nothing here runs.
 *
 * @module
 */
export {
  ErrorCode,
  InvalidArgumentError,
  InvalidOptionError,
  isOnceflowError,
  OnceflowError,
  StoreError,
  type StoreOutcome,
} from '../core/errors.js';
// What a limit is and what a store answers per limit (the math itself is the store's, see
// docs/testing.md: the memory store is the reference model).
export type { Algorithm, LimitSpec, LimitVerdict, Verdict } from '../windows/limits/types.js';
export type {
  ApplyOutcome,
  Balances,
  IdempotencyBeginCommand,
  IdempotencyBeginReply,
  IdempotencyRecordState,
  IdempotencyStoreOps,
  JournalEntry,
  JournalQuery,
  JsonValue,
  LeaseReply,
  LedgerApplyCommand,
  LedgerApplyResult,
  LedgerResolveResult,
  LimitCall,
  LimiterAdjustCommand,
  LimiterAdjustReply,
  LimiterDeleteCommand,
  LimiterTakeCommand,
  LimiterTakeReply,
  LimitState,
  OrderingStoreOps,
  ResolveOutcome,
  Store,
  VersionUpsertReply,
  WindowState,
} from './store.js';
