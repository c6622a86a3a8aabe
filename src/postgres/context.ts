import { setTimeout as sleep } from 'node:timers/promises';
import { isOnceflowError, StoreError } from '../core/errors.js';
import { type Deadline, deadlineIn, PgTimeoutError, timeLeft, within } from './deadline.js';
import {
  connectionLost,
  type PgCallKind,
  pgFailure,
  pgStoreError,
  retriableInOperation,
} from './pg-error.js';
import {
  checkout,
  type PgPoolClientLike,
  type PgPoolLike,
  type PgQueryable,
  type PgQueryConfig,
  withClient,
} from './pg-like.js';

// A statement that PostgreSQL rolled back as a serialization failure or a deadlock victim is sent
// again, at most this many times in all: under READ COMMITTED the store's statements take row
// locks in one order (one owner's or one key's rows), so a deadlock needs a caller's own
// transaction in the mix and a second one is rarer still; five tries with backoff doubling from
// 2 ms (full jitter) wait at most ~30 ms before the error reaches the caller as retriable.
const MAX_TRIES = 5;
const BACKOFF_MS = 2;

/**
 * What every operation of the Postgres store runs through: the schema (validated, written
 * double-quoted into SQL), and `query`, which runs one statement for a named store operation and
 * turns a failure into a typed, classified `StoreError` (see pg-error.ts).
 */
export interface PgContext {
  /** The schema as SQL: a double-quoted identifier, safe to interpolate (checkSchemaName). */
  readonly schema: string;
  /** True for a store bound to a caller's client inside its transaction (`inTransaction`). */
  readonly bound: boolean;
  /** Runs one statement; resolves to its rows. */
  query(operation: string, kind: PgCallKind, config: PgQueryConfig): Promise<Record<string, unknown>[]>;
}

// Waits for the schema's migrations within an operation's deadline: an error of onceflow's (the
// migration's own) passes as it is, any other failure (the deadline, the connection) is `fail`ed
// into the operation's StoreError.
async function schemaReady(
  ready: () => Promise<void>,
  deadline: Deadline,
  fail: (err: unknown) => StoreError,
): Promise<void> {
  try {
    await within(ready(), deadline, 'the schema was not migrated');
  } catch (err) {
    if (isOnceflowError(err)) throw err;
    throw fail(err);
  }
}

/**
 * The context of a store on a pool: each statement on a client checked out for it (one round
 * trip: the statement is its own transaction), after `ready` (the schema's migrations). A
 * serialization failure or deadlock is retried (MAX_TRIES); a client whose connection failed is
 * destroyed, not returned to the pool. The whole operation (migration, checkout, statement,
 * retries) ends within `timeoutMs`: a pool that has no client to give, or a server that never
 * answers, is a retriable StoreError then (a write's outcome `unknown` once its statement was
 * sent), and the client that waited is destroyed.
 */
export function poolContext(
  pool: PgPoolLike,
  schema: string,
  ready: () => Promise<void>,
  timeoutMs: number,
): PgContext {
  return {
    schema: `"${schema}"`,
    bound: false,
    async query(operation, kind, config) {
      const deadline = deadlineIn(timeoutMs);
      await schemaReady(ready, deadline, (err) => pgStoreError(operation, err, kind, false));
      for (let attempt = 1; ; attempt++) {
        let client: PgPoolClientLike;
        try {
          client = await within(checkout(pool), deadline, 'no client from the pool', (late) =>
            late.release(),
          );
        } catch (err) {
          throw pgStoreError(operation, err, kind, false);
        }
        try {
          const run = (c: PgPoolClientLike) => within(c.query(config), deadline, 'no answer from PostgreSQL');
          return (await withClient(client, run, connectionLost)).rows;
        } catch (err) {
          if (attempt < MAX_TRIES && retriableInOperation(err) && timeLeft(deadline)) {
            await sleep(Math.random() * BACKOFF_MS * 2 ** (attempt - 1));
            continue;
          }
          throw pgStoreError(operation, err, kind, true);
        }
      }
    },
  };
}

// Clients whose transaction a bound store's timed-out statement doomed, with the timeout, while
// that statement may still be running and book: the transaction must not commit
// (withTransaction reads this to close the connection instead of sending COMMIT or a ROLLBACK
// that would wait behind the statement; see boundContext).
const doomed = new WeakMap<object, Error>();

/** The timeout that doomed `client`'s transaction, when a bound store's statement timed out on it. */
export function doomedBy(client: object): Error | undefined {
  return doomed.get(client);
}

// Sent on a client after a bound store's statement timed out on it. `pg` runs a client's queries
// one at a time in the order they were sent, so this runs after the timed-out statement and
// before any COMMIT the caller sends later, and its error aborts the transaction: that COMMIT
// answers ROLLBACK, and the timed-out statement's effects never commit, whenever it ends.
const ABORT_SQL = `DO $$BEGIN RAISE EXCEPTION 'onceflow: a store statement of this transaction timed out; roll the transaction back'; END$$`;

const ROLL_BACK =
  'the transaction cannot commit (it is aborted; what the statement did rolls back with it): roll it back, or close the client';

/**
 * The context of a store bound to a caller's client inside its `BEGIN`: statements run on that
 * client, in that transaction, and are never retried here (any error aborts the caller's
 * transaction, so only the caller can try again, the whole transaction). Nothing an operation did
 * commits unless the caller commits.
 *
 * A statement with no answer within `timeoutMs` is still running on the server (a client-side
 * timeout aborts nothing there), and it would commit with the caller's transaction: the
 * transaction is doomed instead (ABORT_SQL queued behind it; `doomedBy` for withTransaction),
 * which makes `not-applied` true, and later calls on the client are refused at once while the
 * statement runs (the server refuses them after it: the transaction is aborted).
 */
export function boundContext(
  client: PgQueryable,
  schema: string,
  ready: () => Promise<void>,
  timeoutMs: number,
): PgContext {
  return {
    schema: `"${schema}"`,
    bound: true,
    async query(operation, kind, config) {
      const deadline = deadlineIn(timeoutMs);
      const earlier = doomed.get(client);
      if (earlier !== undefined) {
        throw new StoreError(
          operation,
          new Error(`an earlier store statement of this transaction timed out: ${ROLL_BACK}`, {
            cause: earlier,
          }),
          { outcome: 'not-applied', retriable: true },
        );
      }
      // Nothing is sent on the client before the schema is ready (the migration has its own).
      await schemaReady(
        ready,
        deadline,
        (err) => new StoreError(operation, err, { outcome: 'not-applied', retriable: true }),
      );
      try {
        return (await within(client.query(config), deadline, 'no answer from PostgreSQL')).rows;
      } catch (err) {
        if (err instanceof PgTimeoutError) {
          doom(client, err);
          throw new StoreError(operation, new PgTimeoutError(`${err.message}; ${ROLL_BACK}`), {
            outcome: 'not-applied',
            retriable: true,
          });
        }
        // Whatever failed, the caller's transaction cannot commit it: rolled back with it.
        const { retriable } = pgFailure(err, kind, true);
        throw new StoreError(operation, err, { outcome: 'not-applied', retriable });
      }
    },
  };
}

function doom(client: PgQueryable, timeout: Error): void {
  doomed.set(client, timeout);
  // Once ABORT_SQL has run, the timed-out statement has ended and the transaction is aborted on
  // the server (a COMMIT answers ROLLBACK, a statement 25P02): the mark is dropped then, so a
  // client the caller rolls back and uses again is a sound one.
  const settled = (): void => {
    doomed.delete(client);
  };
  try {
    // Its rejection (the point of it) is no one's to hear.
    client.query({ text: ABORT_SQL }).then(settled, settled);
  } catch {
    // A client that cannot take a query any more is closing: its transaction cannot commit.
  }
}
