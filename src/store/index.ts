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
import type { Store } from './store.js';

export {
  ErrorCode,
  InvalidArgumentError,
  InvalidOptionError,
  isOnceflowError,
  OnceflowError,
  StoreError,
  type StoreOutcome,
} from '../core/errors.js';
export type {
  ApplyOutcome,
  Balances,
  JournalEntry,
  JournalQuery,
  JsonValue,
  LedgerApplyCommand,
  LedgerApplyResult,
  LedgerResolveResult,
  ResolveOutcome,
  Store,
  WindowState,
} from './store.js';

// The optional capabilities' commands and replies, named by the Store method that takes or
// answers them: each resolves to the contract's own type.
type Op<K extends keyof Store> = Extract<NonNullable<Store[K]>, (...args: never[]) => unknown>;

/** A multi-limit take as {@link Store.limiterTake} receives it: every limit admits the cost, or none is charged. */
export type LimiterTakeCommand = Parameters<Op<'limiterTake'>>[0];
/** What {@link Store.limiterTake} answers: the decision time and one verdict per limit. */
export type LimiterTakeReply = Awaited<ReturnType<Op<'limiterTake'>>>;
/** What {@link Store.versionUpsert} answers. */
export type VersionUpsertReply = Awaited<ReturnType<Op<'versionUpsert'>>>;
/** What {@link Store.leaseRenew} answers: whether the run holds the name, and its timestamp. */
export type LeaseReply = Awaited<ReturnType<Op<'leaseRenew'>>>;
/** An idempotency record's begin, as {@link Store.idempotencyBegin} receives it. */
export type IdempotencyBeginCommand = Parameters<Op<'idempotencyBegin'>>[0];
/** What {@link Store.idempotencyBegin} answers: acquired, completed, in progress or mismatch. */
export type IdempotencyBeginReply = Awaited<ReturnType<Op<'idempotencyBegin'>>>;
