import type { Duration } from '../core/duration.js';
import { InvalidOptionError, isOnceflowError, StoreError, type StoreOutcome } from '../core/errors.js';
import { isPlainObject, knownKeys } from '../core/validate.js';
import { checkTimeout, deadlineIn, within } from './deadline.js';
import { migrations } from './migrations.generated.js';
import { connectionLost } from './pg-error.js';
import { checkout, type PgPoolClientLike, type PgPoolLike, type PgQueryable, withClient } from './pg-like.js';
import { checkSchemaName } from './schema-name.js';

/** Options of {@link migrate}. */
export interface MigrateOptions {
  /** A `pg` Pool (one client is checked out for the migration and returned). */
  pool: PgPoolLike;
  /** The schema to create or bring up to date. Default `'onceflow'`. */
  schema?: string;
  /**
   * The longest the migration waits, from the checkout to its COMMIT (another process's
   * migration of the same schema included: they take turns). Past it the call rejects with a
   * retriable `ERR_STORE` and its connection is closed: `not-applied` before its COMMIT was sent
   * (the server rolls the migration back), `unknown` once it was (it may land). Migrations are
   * idempotent: run it again either way. Default `'10s'` (the migrations take well under a
   * second); a positive duration.
   */
  timeout?: Duration;
}

/** What {@link migrate} did: the versions it applied now (empty when the schema was current). */
export interface MigrateResult {
  readonly schema: string;
  readonly applied: readonly { readonly version: number; readonly name: string }[];
  /** The schema's version after the call: the newest migration this onceflow knows. */
  readonly version: number;
}

/** The newest schema version this build of onceflow knows. */
export const SCHEMA_VERSION =
  migrations.length === 0 ? 0 : (migrations.at(-1) as { version: number }).version;

/**
 * Creates the store's schema or brings it up to date: every migration the schema has not had, in
 * order, in one transaction. Safe to run from many processes at once: a transaction-scoped
 * advisory lock on the schema's name makes them take turns, and each finds what the one before
 * it applied. Idempotent: on a current schema it changes nothing. A schema already at a newer
 * version than this onceflow knows is refused (run the newer onceflow, or roll it back first).
 * `createPostgresStore` runs it on first use unless `migrate: false`; deploy pipelines run it
 * ahead (`onceflow migrate --postgres URL`).
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { migrate } from 'onceflow/postgres';
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' });
 * const schema = `example_migrate_${process.pid}`;
 * (await migrate({ pool, schema })).applied.length > 0; // true
 * (await migrate({ pool, schema })).applied; // []
 * await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
 * await pool.end();
 * ```
 */
export async function migrate(options: MigrateOptions): Promise<MigrateResult> {
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, ['pool', 'schema', 'timeout']);
  const { pool } = options;
  if (typeof (pool as PgPoolLike | undefined)?.connect !== 'function') {
    throw new InvalidOptionError('pool', 'a pg Pool (with connect())', pool);
  }
  // Only an absent schema is the default one: `null` is refused as a wrong name.
  const schema = checkSchemaName(options.schema === undefined ? 'onceflow' : options.schema);
  const timeoutMs = checkTimeout('timeout', options.timeout);
  const deadline = deadlineIn(timeoutMs);
  let client: PgPoolClientLike;
  try {
    client = await within(checkout(pool), deadline, 'no client from the pool', (late) => late.release());
  } catch (err) {
    throw new StoreError('migrate', err, { outcome: 'not-applied', retriable: true });
  }
  // migrateOn wraps what failed in a StoreError: its cause says whether the connection is gone.
  // Past the deadline the client is destroyed, which makes the server roll the migration back,
  // unless its COMMIT was sent already: that one may land (see `progress`).
  const progress: MigrationProgress = { gaveUp: false, commitSent: false };
  return withClient(
    client,
    async (c) => {
      try {
        return await within(migrateOn(c, schema, progress), deadline, 'the migration did not finish');
      } catch (err) {
        if (isOnceflowError(err)) throw err;
        progress.gaveUp = true;
        throw migrateError(err, {
          outcome: progress.commitSent ? 'unknown' : 'not-applied',
          retriable: true,
        });
      }
    },
    (err) => connectionLost((err as Error).cause ?? err),
  );
}

/**
 * The StoreError of a failed migration, the driver's error its `cause` (so withClient can tell a
 * lost connection), its message saying that running it again is always safe.
 */
function migrateError(cause: unknown, facts: { outcome: StoreOutcome; retriable: boolean }): StoreError {
  const error = new StoreError('migrate', cause, facts);
  error.message += '; migrations are idempotent: run migrate again (it applies only what is missing)';
  return error;
}

/**
 * How far a migration got: whether its caller gave up on it (past the timeout, before COMMIT:
 * then COMMIT is never sent, and closing the connection rolls everything back), and whether its
 * COMMIT was sent (then it may land whatever happens to the connection: `unknown`).
 */
interface MigrationProgress {
  gaveUp: boolean;
  commitSent: boolean;
}

async function migrateOn(
  client: PgQueryable,
  schema: string,
  progress: MigrationProgress,
): Promise<MigrateResult> {
  const q = (text: string, values?: unknown[]) => client.query(values ? { text, values } : { text });
  try {
    await q('BEGIN');
    // Two int4 keys: the first names onceflow's migrations, the second the schema, so two
    // schemas migrate in parallel and nothing else that uses advisory locks meets these.
    await q('SELECT pg_advisory_xact_lock($1::int4, hashtext($2))', [LOCK_CLASS, schema]);
    await q(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await q(
      `CREATE TABLE IF NOT EXISTS "${schema}".migrations (
         version int PRIMARY KEY,
         name text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    );
    const done = new Set(
      (await q(`SELECT version FROM "${schema}".migrations`)).rows.map((r) => Number(r['version'])),
    );
    const newest = Math.max(0, ...done);
    if (newest > SCHEMA_VERSION) {
      throw new StoreError(
        'migrate',
        new Error(
          `schema "${schema}" is at version ${newest}, newer than this onceflow knows (${SCHEMA_VERSION}): run a newer onceflow`,
        ),
        { outcome: 'not-applied', retriable: false },
      );
    }
    const applied: { version: number; name: string }[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await q(m.sql.replaceAll('__schema__', `"${schema}"`));
      await q(`INSERT INTO "${schema}".migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      applied.push({ version: m.version, name: m.name });
    }
    // The caller gave up (its timeout passed): no COMMIT, the closed connection rolls back.
    if (progress.gaveUp) throw new Error('the migration was abandoned before COMMIT');
    progress.commitSent = true;
    await q('COMMIT');
    return { schema, applied, version: SCHEMA_VERSION };
  } catch (err) {
    if (!progress.commitSent) await q('ROLLBACK').catch(() => {});
    if (isOnceflowError(err, 'ERR_STORE')) throw err;
    // DDL is transactional in PostgreSQL: a failed migration leaves the schema as it was, unless
    // the connection was lost during COMMIT, which may have landed.
    const lost = connectionLost(err);
    throw migrateError(err, {
      outcome: progress.commitSent && lost ? 'unknown' : 'not-applied',
      retriable: lost,
    });
  }
}

// The first key of the migration lock: "onceflow" hashed once, a constant so it never changes.
const LOCK_CLASS = 0x6f6e6365; // 'once'
