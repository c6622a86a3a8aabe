import type { Duration } from '../core/duration.js';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { isPlainObject, knownKeys } from '../core/validate.js';
import type { Store } from '../store/store.js';
import { boundContext, type PgContext, poolContext } from './context.js';
import { checkTimeout } from './deadline.js';
import { idempotencyCleanup, postgresIdempotencyOps } from './idempotency-ops.js';
import { checkLedgerOptions, ledgerCleanup, type PgLedgerOptions, postgresLedgerOps } from './ledger-ops.js';
import { limiterCleanup, postgresLimiterOps } from './limiter-ops.js';
import { migrate } from './migrate.js';
import { postgresOrderingOps } from './ordering-ops.js';
import type { PgPoolLike, PgQueryable } from './pg-like.js';
import { checkSchemaName } from './schema-name.js';

/** Options of {@link createPostgresStore}. */
export interface PostgresStoreOptions extends PgLedgerOptions {
  /** A `pg` Pool. Not closed by the store: the pool is the caller's. */
  pool: PgPoolLike;
  /**
   * The schema of every table and function, so applications and test runs never meet:
   * `[a-z_][a-z0-9_]*`, at most 63 characters. Default `'onceflow'`.
   */
  schema?: string;
  /**
   * Whether the store brings its schema up to date (see {@link migrate}) before its first
   * operation. Default `true`; pass `false` when deploys run `onceflow migrate --postgres URL`
   * and the application's database user may not run DDL.
   */
  migrate?: boolean;
  /**
   * The longest one operation waits for PostgreSQL: for the migration before the first one, for
   * a client from the pool (a pool's own `connectionTimeoutMillis` defaults to waiting forever),
   * and for its statement's answer (a server that stopped answering). Past it the operation
   * rejects with a retriable `ERR_STORE` (outcome `unknown` for a write whose statement was sent)
   * and the client that waited is destroyed (inside `inTransaction`: the caller's transaction
   * is doomed instead, `not-applied`). Default `'10s'`; a positive duration.
   */
  timeout?: Duration;
}

/** What {@link PostgresStore.cleanup} deleted. */
export interface CleanupResult {
  /** Expired idempotency records. */
  readonly idempotency: number;
  /** Journal entries past the retention. */
  readonly journal: number;
  /** Limiter states past their expiry (equivalent to no state). */
  readonly limiter: number;
}

/** A store bound to a caller's transaction: every operation runs in it, and commits with it. */
export type TransactionStore = Omit<PostgresStore, 'close' | 'inTransaction' | 'cleanup' | 'schema'>;

/** The Postgres store: the whole Store contract, plus what only a database can do. */
export interface PostgresStore extends Required<Store> {
  readonly kind: 'postgres';
  /** The schema it keeps its tables and functions in. */
  readonly schema: string;
  /**
   * A store bound to `client`, a client the caller has checked out and sent `BEGIN` on (run the
   * transaction with `withTransaction`, which listens for the client's `'error'`, commits
   * or rolls back, and reports failures as typed errors): a ledger apply, a version-gate upsert
   * or an idempotency record made through it commits or rolls back with the caller's own writes
   * in that transaction. Nothing is retried inside (an error aborts
   * the caller's transaction: the caller rolls back and may run the whole transaction again). A
   * statement that times out may still be running on the server: the store queues a failing
   * statement behind it on `client`, so the transaction cannot commit it (a later `COMMIT`
   * answers `ROLLBACK`), and refuses further calls on `client` while it runs; its error says
   * `not-applied`.
   */
  inTransaction(client: PgQueryable): TransactionStore;
  /**
   * Deletes what no operation needs any more, at most `limit` rows of each kind per call (default
   * 1000: a few milliseconds of work, so a periodic call never holds locks for long): expired
   * idempotency records, limiter states past their expiry, journal entries past the retention.
   * Call it periodically (every minute, say); it is safe from many processes at once.
   */
  cleanup(options?: { limit?: number }): Promise<CleanupResult>;
}

/**
 * The store on PostgreSQL: every operation is one statement (a function of the store's schema)
 * in one round trip, its own transaction, with time from the database's clock. Many processes
 * share one exact ledger, limiter and idempotency table; `inTransaction` makes an operation part
 * of the caller's own transaction.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { createPostgresStore } from 'onceflow/postgres';
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' });
 * const schema = `example_${process.pid}`; // one schema per application (or test run)
 * // 4: a repeat of one of an owner's last 4 entries is 'duplicate'; an older one 'stale' (it has an order).
 * const ledger = createLedger({ store: createPostgresStore({ pool, schema }), capacity: 4 });
 * (await ledger.apply({ owner: 'p1', signature: 's1', order: 1, deltas: { coins: 5 } })).outcome; // 'applied'
 * (await ledger.apply({ owner: 'p1', signature: 's1', order: 1, deltas: { coins: 5 } })).outcome; // 'duplicate'
 * await pool.query(`DROP SCHEMA "${schema}" CASCADE`); // clean up the example
 * await pool.end();
 * ```
 */
export function createPostgresStore(options: PostgresStoreOptions): PostgresStore {
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, ['pool', 'schema', 'migrate', 'journal', 'timeout']);
  const { pool } = options;
  if (typeof (pool as PgPoolLike | undefined)?.connect !== 'function') {
    throw new InvalidOptionError('pool', 'a pg Pool (with connect() and query())', pool);
  }
  // Only an absent schema is the default one: `null` is refused as a wrong name (checkSchemaName).
  const schema = checkSchemaName(options.schema === undefined ? 'onceflow' : options.schema);
  const timeoutMs = checkTimeout('timeout', options.timeout);
  if (options.migrate !== undefined && typeof options.migrate !== 'boolean') {
    throw new InvalidOptionError('migrate', 'a boolean', options.migrate);
  }
  const ledgerOptions = checkLedgerOptions(options);
  // The first operation migrates; the ones racing it wait for the same promise. A failed
  // migration is forgotten, so the next operation tries again (the database may be back).
  let migrated: Promise<void> | undefined;
  const ready =
    options.migrate === false
      ? () => Promise.resolve()
      : () => {
          migrated ??= migrate({ pool, schema, timeout: timeoutMs }).then(
            () => undefined,
            (err: unknown) => {
              migrated = undefined;
              throw err;
            },
          );
          return migrated;
        };
  const ctx = poolContext(pool, schema, ready, timeoutMs);
  const store = compose(ctx, ledgerOptions);
  return Object.freeze({
    ...store,
    kind: 'postgres' as const,
    schema,
    inTransaction(client: PgQueryable): TransactionStore {
      if (typeof (client as PgQueryable | undefined)?.query !== 'function') {
        throw new InvalidArgumentError(
          'client',
          "a pg client inside the caller's transaction (with query())",
          client,
        );
      }
      return Object.freeze({
        ...compose(boundContext(client, schema, ready, timeoutMs), ledgerOptions),
        kind: 'postgres',
      });
    },
    async cleanup(cleanupOptions?: { limit?: number }): Promise<CleanupResult> {
      if (cleanupOptions !== undefined) {
        if (!isPlainObject(cleanupOptions))
          throw new InvalidArgumentError('options', 'an object', cleanupOptions);
        knownKeys('', cleanupOptions, ['limit']);
      }
      const limit = cleanupOptions?.limit ?? 1000;
      if (!Number.isSafeInteger(limit) || limit <= 0) {
        throw new InvalidArgumentError('limit', 'a positive safe integer', limit);
      }
      return {
        idempotency: await idempotencyCleanup(ctx)(limit),
        journal: await ledgerCleanup(ctx, ledgerOptions)(limit),
        limiter: await limiterCleanup(ctx)(limit),
      };
    },
    async close(): Promise<void> {},
  });
}

function compose(ctx: PgContext, ledgerOptions: ReturnType<typeof checkLedgerOptions>) {
  return {
    ...postgresLedgerOps(ctx, ledgerOptions),
    ...postgresLimiterOps(ctx),
    ...postgresOrderingOps(ctx),
    ...postgresIdempotencyOps(ctx),
  };
}
