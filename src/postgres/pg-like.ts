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
}

/** A `pg.Pool`: the store checks a client out per operation and returns it. */
export interface PgPoolLike extends PgQueryable {
  connect(): Promise<PgPoolClientLike>;
}
