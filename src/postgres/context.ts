import { setTimeout as sleep } from 'node:timers/promises';
import { isOnceflowError, StoreError } from '../core/errors.js';
import { deadlineIn, timeLeft, within } from './deadline.js';
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
      try {
        await within(ready(), deadline, 'the schema was not migrated');
      } catch (err) {
        if (isOnceflowError(err)) throw err;
        throw pgStoreError(operation, err, kind, false);
      }
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

/**
 * The context of a store bound to a caller's client inside its `BEGIN`: statements run on that
 * client, in that transaction, and are never retried here (any error aborts the caller's
 * transaction, so only the caller can try again, the whole transaction). Nothing an operation did
 * commits unless the caller commits.
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
      try {
        await within(ready(), deadline, 'the schema was not migrated');
        return (await within(client.query(config), deadline, 'no answer from PostgreSQL')).rows;
      } catch (err) {
        if (isOnceflowError(err)) throw err;
        // Whatever failed, the caller's transaction cannot commit it: rolled back with it.
        const { retriable } = pgFailure(err, kind, true);
        throw new StoreError(operation, err, { outcome: 'not-applied', retriable });
      }
    },
  };
}
