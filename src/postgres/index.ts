/**
 * `onceflow/postgres`: the store on PostgreSQL (every operation one transaction), for the
 * caller's `pg` pool; its migrations; and `withTransaction`, which books onceflow operations in
 * the caller's own transaction. Re-exports only.
 *
 * @module
 */
export { type MigrateOptions, type MigrateResult, migrate, SCHEMA_VERSION } from './migrate.js';
export type { PgPoolClientLike, PgPoolLike, PgQueryable, PgQueryConfig, PgResult } from './pg-like.js';
export {
  type CleanupResult,
  createPostgresStore,
  type PostgresStore,
  type PostgresStoreOptions,
  type TransactionStore,
} from './postgres-store.js';
export { type PoolClientOf, type TransactionOptions, withTransaction } from './transaction.js';
