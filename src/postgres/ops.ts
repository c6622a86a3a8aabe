import type { IdempotencyStoreOps } from '../store/idempotency.js';
import type { OrderingStoreOps } from '../store/ordering.js';
import type { Store } from '../store/store.js';

/** The ledger half of the Postgres store (ledger-ops.ts). */
export type PgLedgerOps = Pick<
  Store,
  'ledgerApply' | 'ledgerResolve' | 'ledgerBalances' | 'ledgerWindow' | 'ledgerJournal' | 'ledgerScopeTotals'
>;

/** The limiter half (limiter-ops.ts). */
export type PgLimiterOps = Required<
  Pick<Store, 'limiterTake' | 'limiterReset' | 'limiterDelete' | 'limiterAdjust'>
>;

/** Checkpoints, version gates, snowflake clocks (ordering-ops.ts). */
export type PgOrderingOps = Required<OrderingStoreOps>;

/** Idempotency records (idempotency-ops.ts). */
export type PgIdempotencyOps = Required<IdempotencyStoreOps>;

/**
 * A part's bounded clean-up: deletes at most `limit` rows that no operation needs any more
 * (expired idempotency records, limiter states past their expiry, journal entries past the
 * retention), oldest first; resolves to how many it deleted. Called by `store.cleanup()`.
 */
export type PgCleanup = (limit: number) => Promise<number>;
