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

/**
 * Checks a client out of `pool` for the duration of `use`: an `'error'` the client emits
 * meanwhile (its connection failed: `use`'s query rejects with it too) is absorbed, not left
 * unhandled to crash the process; a client whose connection failed is destroyed on release.
 * (`pool.query` does the same; the store checks clients out itself to know whether a failed
 * statement was ever sent.)
 */
export async function withClient<T>(
  client: PgPoolClientLike,
  use: (client: PgPoolClientLike) => Promise<T>,
  broken: (err: unknown) => boolean,
): Promise<T> {
  const absorb = (): void => {};
  client.on?.('error', absorb);
  let failed: unknown;
  try {
    return await use(client);
  } catch (err) {
    failed = err;
    throw err;
  } finally {
    const destroy = failed !== undefined && broken(failed);
    // A broken client may emit again while it is torn down (the socket's end after the server's
    // termination notice): it keeps the listener to its end. A sound one goes back to the pool,
    // which listens while it is idle.
    if (!destroy) client.removeListener?.('error', absorb);
    client.release(destroy ? (failed as Error) : undefined);
  }
}

/** A `pg.Pool`: the store checks a client out per operation and returns it. */
export interface PgPoolLike extends PgQueryable {
  connect(): Promise<PgPoolClientLike>;
}
