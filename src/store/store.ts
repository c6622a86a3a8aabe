// The Store contract, composed from one file of command and reply types per capability: ledger.ts,
// limiter.ts, ordering.ts, idempotency.ts. Every type a store implementer needs is re-exported
// here, so one import reaches the whole contract.
import type { IdempotencyStoreOps } from './idempotency.js';
import type {
  Balances,
  JournalEntry,
  JournalQuery,
  LedgerApplyCommand,
  LedgerApplyResult,
  LedgerResolveResult,
  WindowState,
} from './ledger.js';
import type {
  LimiterAdjustCommand,
  LimiterAdjustReply,
  LimiterDeleteCommand,
  LimiterTakeCommand,
  LimiterTakeReply,
} from './limiter.js';
import type { OrderingStoreOps } from './ordering.js';

export type { JsonValue } from '../core/json-copy.js';
export type {
  IdempotencyBeginCommand,
  IdempotencyBeginReply,
  IdempotencyRecordState,
  IdempotencyStoreOps,
} from './idempotency.js';
export type {
  ApplyOutcome,
  Balances,
  JournalEntry,
  JournalQuery,
  LedgerApplyCommand,
  LedgerApplyResult,
  LedgerResolveResult,
  ResolveOutcome,
  WindowState,
} from './ledger.js';
export type {
  LimitCall,
  LimiterAdjustCommand,
  LimiterAdjustReply,
  LimiterDeleteCommand,
  LimiterTakeCommand,
  LimiterTakeReply,
  LimitState,
} from './limiter.js';
export type { LeaseReply, OrderingStoreOps, VersionUpsertReply } from './ordering.js';

/**
 * The contract every store implements: semantic operations, each one **atomic** (a single
 * synchronous call in memory, one Lua script in Redis, one transaction in PostgreSQL). There is
 * no crash point inside an operation: either all of its effects happen or none does.
 *
 * The memory store is the reference model; `onceflow/testing` holds the cases every store
 * must pass. The ordering operations (checkpoints, version gates, snowflake clocks) and the
 * idempotency records are optional: see {@link OrderingStoreOps} and {@link IdempotencyStoreOps}.
 */
export interface Store extends OrderingStoreOps, IdempotencyStoreOps {
  /** A short name for logs and metrics (`'memory'`, `'redis'`, ...). */
  readonly kind: string;
  /** Window check (with horizon), balance change and journal append, in one atomic step. */
  ledgerApply(command: LedgerApplyCommand): Promise<LedgerApplyResult>;
  /**
   * Settles an entry that `ledgerApply` may answer `stale`, from the owner's window and retained
   * journal, in one atomic step: `duplicate` when either holds the signature; `applied` when the
   * journal provably covers the entry and does not hold it, booked exactly as `ledgerApply` books
   * a fresh entry (window, balances, scope totals, journal); `unknown` otherwise, changing nothing.
   *
   * "Provably covers": the store records, per owner, the highest order among the journal entries it
   * dropped (retention) and whether it dropped one without an order. Nothing dropped: absence
   * proves the entry new. An entry with an order above every dropped order, or one without an
   * order when none without was dropped, is new if absent. This rests on one assumption: **an
   * event's signature always carries the same order (or always none)**; a signature delivered
   * with different orders may be applied twice. It never relies on the window's capacity bound to
   * call an entry new. A store that keeps no journal proves nothing new once the owner booked an
   * entry. Stores that read the journal in steps (Redis) decide in the last one, atomically.
   */
  ledgerResolve(command: LedgerApplyCommand): Promise<LedgerResolveResult>;
  ledgerBalances(ledger: string, owner: string): Promise<Balances>;
  ledgerWindow(ledger: string, owner: string): Promise<WindowState>;
  ledgerJournal(ledger: string, query: JournalQuery): Promise<JournalEntry[]>;
  /** Sum of every applied delta booked under `scope`, kept exact whatever the journal retention. */
  ledgerScopeTotals(ledger: string, scope: string): Promise<Balances>;
  /**
   * Rate limiting (DESIGN §3.5, src/limiter): one multi-limit decision in one atomic step; every
   * limit admits the cost and is charged, or none is. Optional: stores without it have no limiter.
   * A malformed command (a cost or time out of range, a bad spec) rejects with an
   * `InvalidArgumentError`, any other failure with a `StoreError`, and neither charges anything:
   * the limiter answers those per its degraded policy, so a store must never answer a decision it
   * did not make. A store that decides in this process may answer synchronously (the memory store
   * does); a failure is always a rejected promise, never a throw. A limit whose spec has
   * `blockMs` reads its block first and, refused, is blocked (see `LimitSpec.blockMs`): a store
   * that keeps no blocks has no `limiterAdjust`, and the limiter then refuses `blockDuration`.
   */
  limiterTake?(command: LimiterTakeCommand): LimiterTakeReply | Promise<LimiterTakeReply>;
  /**
   * Drops every limiter state of `namespace` (the command's `namespace` of the takes), and no
   * other namespace's; returns how many states it dropped.
   */
  limiterReset?(namespace: string): Promise<number>;
  /**
   * Drops the states of these limits for these subjects (a take's limits, without cost or time),
   * after every take this process sent before; returns how many held state.
   */
  limiterDelete?(command: LimiterDeleteCommand): Promise<number>;
  /**
   * Reads or changes these limits' states and blocks in one atomic step (see
   * {@link LimiterAdjustCommand}): what the limiter's get, set, reward, penalty, block and
   * reset-with-answer need, and what a take of a limit with `blockMs` reads. Optional: a limiter
   * on a store without it refuses those calls (and `blockDuration`) with an `InvalidOptionError`.
   */
  limiterAdjust?(command: LimiterAdjustCommand): Promise<LimiterAdjustReply>;
  /** Releases what the store holds (connections are the caller's: they are not closed). */
  close?(): Promise<void>;
}
