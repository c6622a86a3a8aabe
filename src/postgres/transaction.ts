import type { Duration } from '../core/duration.js';
import { InvalidArgumentError, InvalidOptionError, isOnceflowError, StoreError } from '../core/errors.js';
import { isPlainObject, knownKeys } from '../core/validate.js';
import { doomedBy } from './context.js';
import { checkTimeout, deadlineIn, within } from './deadline.js';
import { connectionLost, pgFailure, sqlState } from './pg-error.js';
import { checkout, type PgPoolClientLike, type PgPoolLike } from './pg-like.js';

/** Options of {@link withTransaction}. */
export interface TransactionOptions {
  /**
   * How long to wait for a client from the pool, and for each of `BEGIN`, `COMMIT` and
   * `ROLLBACK` (your own statements are yours to bound). Default `'10s'`.
   */
  timeout?: Duration;
}

/**
 * The client type a pool hands out (`pg.PoolClient` for a `pg.Pool`), read from its `connect`:
 * `pg` declares the callback form last, and TypeScript infers from the last overload.
 */
export type PoolClientOf<P> = P extends {
  connect(callback: (err: never, client: infer C, ...rest: never[]) => void): void;
}
  ? Exclude<C, undefined>
  : P extends { connect(): Promise<infer C> }
    ? C
    : PgPoolClientLike;

/**
 * Runs `fn` inside a transaction on a client of `pool`: checks the client out, listens for its
 * `'error'` (a connection that dies between two statements emits it, and unheard it would crash
 * the process), sends `BEGIN`, runs `fn(client)`, then `COMMIT` when `fn` resolves or `ROLLBACK`
 * when it throws, and returns the client to the pool (destroyed when its connection broke).
 * Pass the client to `store.inTransaction(client)` so that a ledger apply, a version-gate upsert
 * or an idempotency record commits or rolls back with your own writes.
 *
 * Resolves to what `fn` resolved to, once committed. Rejects with:
 * - what `fn` threw, after the rollback, when it threw an `OnceflowError` (an `ERR_STORE` from
 *   the bound store keeps its code) or an error of its own while the connection was sound;
 * - `ERR_STORE` (operation `'transaction'`, the driver's error in `cause`) when PostgreSQL or the
 *   connection failed: no client within `timeout`, `BEGIN` refused, a statement of `fn` refused
 *   by the server, the connection lost (the server rolls the transaction back), a `COMMIT` that
 *   rolled back, or `fn` resolved after catching a bound store's timeout (its statement may still
 *   run, so the transaction is not committed: the connection is closed, which rolls it back).
 *   `outcome` is `'not-applied'` (nothing of the transaction committed), except for a connection
 *   lost during `COMMIT` (a socket error, or the server ending the backend: 57P01 and kin):
 *   `'unknown'` (it may have committed; run it again with the same signatures and keys, and the
 *   ledger and idempotency records answer `duplicate` and `replayed` if it did). Nothing is
 *   retried here: when `retriable`, run the whole call again.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { createPostgresStore, withTransaction } from 'onceflow/postgres';
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' });
 * const schema = `example_tx_${process.pid}`;
 * const store = createPostgresStore({ pool, schema });
 * // 4: a repeat of one of the shop's last 4 orders is 'duplicate'; an older one 'stale' (it has an order).
 * const ledger = (client: pg.PoolClient) => createLedger({ store: store.inTransaction(client), capacity: 4 });
 * const entry = { owner: 'shop', signature: 'order:1', order: 1, deltas: { cents: 500 } };
 * await withTransaction(pool, async (client) => (await ledger(client).apply(entry)).outcome); // 'applied'
 * // Order 2's callback throws: its booking rolls back, and the error comes back unchanged.
 * const declined = withTransaction(pool, async (client) => {
 *   await ledger(client).apply({ ...entry, signature: 'order:2', order: 2 });
 *   throw new Error('declined');
 * });
 * await declined.catch((err) => err.message); // 'declined'
 * await createLedger({ store, capacity: 4 }).balances('shop'); // { cents: 500n }
 * await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
 * await pool.end();
 * ```
 */
export async function withTransaction<P extends PgPoolLike, T>(
  pool: P,
  fn: (client: PoolClientOf<P>) => Promise<T>,
  options?: TransactionOptions,
): Promise<T> {
  if (typeof (pool as PgPoolLike | undefined)?.connect !== 'function') {
    throw new InvalidArgumentError('pool', 'a pg Pool (with connect())', pool);
  }
  if (typeof fn !== 'function') throw new InvalidArgumentError('fn', 'a function of the client', fn);
  if (options !== undefined) {
    if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object', options);
    knownKeys('', options, ['timeout']);
  }
  const timeoutMs = checkTimeout('timeout', options?.timeout);

  let client: PgPoolClientLike;
  try {
    client = await within(checkout(pool), deadlineIn(timeoutMs), 'no client from the pool', (late) =>
      late.release(),
    );
  } catch (err) {
    throw new StoreError('transaction', err, { outcome: 'not-applied', retriable: true });
  }
  // The connection's own failure, heard whenever it comes: between statements, while `fn` awaits
  // something else, during COMMIT. (checkout added a listener that stays for the client's life;
  // this one only records, for as long as the transaction is ours.)
  let broken: Error | undefined;
  const heard = (err: Error): void => {
    broken ??= err;
  };
  client.on?.('error', heard);
  let destroy: Error | undefined;
  // pg's result names the command that ran (`command`): COMMIT may answer ROLLBACK.
  const control = async (text: string): Promise<{ command?: unknown }> =>
    (await within(client.query({ text }), deadlineIn(timeoutMs), `no answer to ${text}`)) as {
      command?: unknown;
    };
  try {
    try {
      await control('BEGIN');
    } catch (err) {
      destroy = err as Error;
      throw new StoreError('transaction', err, { outcome: 'not-applied', ...failure(err) });
    }
    let value: T;
    try {
      value = await fn(client as PoolClientOf<P>);
    } catch (err) {
      const timedOut = doomedBy(client);
      if (timedOut !== undefined) {
        // A bound store's statement timed out and may still be running: closing the connection
        // rolls the transaction back without waiting for it (a ROLLBACK would queue behind it).
        destroy = timedOut;
        throw err;
      }
      let rollbackFailed: Error | undefined;
      try {
        await control('ROLLBACK');
      } catch (rollbackError) {
        // The connection is gone or stuck: closing it is the rollback (the server aborts an open
        // transaction whose connection ends).
        rollbackFailed = rollbackError as Error;
      }
      destroy = rollbackFailed ?? broken;
      if (isOnceflowError(err)) throw err;
      if (destroy !== undefined || sqlState(err) !== undefined) {
        // The connection's own error says more than what `fn` met because of it: the server's
        // (a terminated backend's 57P01 reaches the ROLLBACK when it comes after it was sent),
        // else the socket's.
        const cause =
          [broken, rollbackFailed].find((e) => sqlState(e) !== undefined) ?? broken ?? rollbackFailed ?? err;
        throw new StoreError('transaction', cause, { outcome: 'not-applied', ...failure(cause) });
      }
      throw err;
    }
    const timedOut = doomedBy(client);
    if (timedOut !== undefined) {
      // `fn` caught a bound store's timeout and resolved: its statement may still run and book,
      // so the transaction is not committed; the connection is closed, which rolls it back.
      destroy = timedOut;
      throw new StoreError('transaction', timedOut, { outcome: 'not-applied', retriable: true });
    }
    if (broken !== undefined) {
      // The connection failed before COMMIT could be sent: the server rolled the transaction back.
      throw new StoreError('transaction', broken, { outcome: 'not-applied', ...failure(broken) });
    }
    let committed: { command?: unknown };
    try {
      committed = await control('COMMIT');
    } catch (err) {
      destroy = err as Error;
      // A server error (a deferred constraint, a serialization failure) rolled the transaction
      // back; a connection lost during COMMIT leaves it unknown, whether the driver's error
      // carries a SQLSTATE (a backend terminated mid-COMMIT: 57P01) or not: the COMMIT may have
      // landed before the connection went.
      const outcome = connectionLost(err) ? 'unknown' : 'not-applied';
      throw new StoreError('transaction', err, { outcome, ...failure(err) });
    }
    if (committed.command === 'ROLLBACK') {
      // PostgreSQL answers COMMIT of a transaction aborted by an earlier error (one `fn` caught)
      // with ROLLBACK, and no error.
      throw new StoreError(
        'transaction',
        new Error('COMMIT rolled back: a statement of the transaction failed earlier'),
        { outcome: 'not-applied', retriable: false },
      );
    }
    return value;
  } finally {
    destroy ??= broken;
    client.release(destroy);
    client.removeListener?.('error', heard);
  }
}

function failure(err: unknown): { retriable: boolean } {
  return { retriable: pgFailure(err, 'write', true).retriable };
}
