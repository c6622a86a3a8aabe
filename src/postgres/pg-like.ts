/**
 * The part of `pg` (node-postgres) the store uses, typed structurally so `pg` stays an optional
 * peer dependency: a `pg.Pool` is a {@link PgPoolLike}, a `pg.Client` or a pooled client is a
 * {@link PgQueryable}.
 */

/** A query as `pg` takes it: with a `name`, `pg` prepares it once per connection and reuses it. */
export interface PgQueryConfig {
  readonly text: string;
  readonly values?: unknown[];
  readonly name?: string;
}

/** What `pg` answers to a query (only the part the store reads). */
export interface PgResult {
  readonly rows: Record<string, unknown>[];
  readonly rowCount?: number | null;
}

/** Anything that runs a query: a `pg.Client`, a pooled client, a `pg.Pool`. */
export interface PgQueryable {
  query(config: PgQueryConfig): Promise<PgResult>;
}

/** A client checked out of a pool; `release(err)` with an error destroys it rather than reusing it. */
export interface PgPoolClientLike extends PgQueryable {
  release(err?: Error | boolean): void;
  /**
   * `pg` clients are EventEmitters: a checked-out client whose connection fails emits `'error'`
   * (as well as rejecting the query in flight), and the pool listens only while it is idle.
   */
  on?(event: 'error', listener: (err: Error) => void): unknown;
  removeListener?(event: 'error', listener: (err: Error) => void): unknown;
}

// Clients the store has given its listener: one each, for the client's life (see withClient).
const absorbing = new WeakSet<object>();
const absorb = (): void => {};

function guarded(client: PgPoolClientLike): PgPoolClientLike {
  if (!absorbing.has(client)) {
    absorbing.add(client);
    client.on?.('error', absorb);
  }
  return client;
}

/**
 * Runs `use` on a client checked out of a pool, then returns it (destroyed when `broken` says its
 * connection failed). The client keeps a no-op `'error'` listener for the rest of its life: a
 * connection that fails emits `'error'` on the client as well as rejecting the query in flight,
 * and it can do so between two statements, in the instant the client is neither the store's nor
 * idle in the pool (which listens only while it is idle), or while it is torn down. Unheard, that
 * event would crash the process; every failure the store cares about reaches it through the
 * query's rejection. One listener per client, added once, so none accumulate. (`pool.query` guards
 * its checkout the same way; the store checks clients out itself to know whether a failed
 * statement was ever sent.)
 */
export async function withClient<T>(
  client: PgPoolClientLike,
  use: (client: PgPoolClientLike) => Promise<T>,
  broken: (err: unknown) => boolean,
): Promise<T> {
  guarded(client);
  let failed: unknown;
  try {
    return await use(client);
  } catch (err) {
    failed = err;
    throw err;
  } finally {
    client.release(failed !== undefined && broken(failed) ? (failed as Error) : undefined);
  }
}

/**
 * A `pg.Pool`: the store checks a client out per operation and returns it. `pg` takes a callback
 * (see {@link checkout}); a pool that only returns a promise works too.
 */
export interface PgPoolLike extends PgQueryable {
  connect(): Promise<PgPoolClientLike>;
  connect(callback: (err: Error | undefined, client: PgPoolClientLike | undefined) => void): void;
}

/**
 * Checks a client out of `pool`, its `'error'` listener added (see {@link withClient}) in the
 * same synchronous step as the checkout, through `pg`'s callback form: the server's notice that
 * it terminated a fresh connection can arrive in the very chunk whose ReadyForQuery completed the
 * connect, and be emitted before any promise continuation could add a listener.
 */
export function checkout(pool: PgPoolLike): Promise<PgPoolClientLike> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const connect = pool.connect as (
      this: PgPoolLike,
      cb: (err: Error | undefined, client?: PgPoolClientLike) => void,
    ) => unknown;
    const returned = connect.call(pool, (err, client) => {
      if (settled) return;
      settled = true;
      if (err || client === undefined) reject(err ?? new Error('pool.connect gave no client'));
      else resolve(guarded(client));
    });
    // A pool that ignores the callback and answers a promise.
    if (returned !== undefined && typeof (returned as Promise<unknown>).then === 'function') {
      (returned as Promise<PgPoolClientLike>).then(
        (client) => {
          if (settled) return;
          settled = true;
          resolve(guarded(client));
        },
        (err: unknown) => {
          if (settled) return;
          settled = true;
          reject(err);
        },
      );
    }
  });
}
