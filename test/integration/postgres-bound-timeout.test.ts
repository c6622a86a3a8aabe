// What a timeout or a lost connection inside a caller's transaction may report, against the real
// server: a bound store's statement that timed out must never commit with the caller's
// transaction (a client-side timeout does not abort a PostgreSQL transaction), a connection lost
// during withTransaction's COMMIT is `unknown` whatever the driver's error carries, and a
// migration whose COMMIT was sent when its timeout passed is `unknown` (it may land).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { createPostgresStore, migrate, SCHEMA_VERSION, withTransaction } from '../../src/postgres/index.js';
import { dropSchema, PG_URL, runSchema, testPool } from './pg-env.js';

/** Polls `check` until it answers true (a generous bound: the CI box is loaded). */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 3000; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never: ${what}`);
}

describe('a bound store whose statement times out inside the caller’s transaction', () => {
  const schema = runSchema('btimeout');
  const pool = testPool(4);
  const admin = testPool(4);
  // 300 ms: the statement waits on a row lock another transaction holds until the test lets go.
  const store = createPostgresStore({ pool, schema, timeout: '300ms' });
  const entry = (owner: string, signature: string, cents: number) => ({
    owner,
    signature,
    deltas: { cents },
  });
  const balances = (owner: string) => createLedger({ store, capacity: 4 }).balances(owner);

  beforeAll(async () => {
    await migrate({ pool: admin, schema });
  });
  afterAll(async () => {
    await dropSchema(admin, schema);
    await pool.end();
    await admin.end();
  });

  /** Another transaction that holds `owner`'s ledger row (it booked an entry and waits). */
  async function holdOwner(owner: string): Promise<pg.PoolClient> {
    const holder = await admin.connect();
    await holder.query('BEGIN');
    await createLedger({ store: store.inTransaction(holder), capacity: 4 }).apply(entry(owner, 'held', 1000));
    return holder;
  }

  it('through withTransaction: the callback catches the timeout and returns, and nothing commits', async () => {
    await createLedger({ store, capacity: 4 }).apply(entry('a', 'first', 1));
    const holder = await holdOwner('a');
    let caught: unknown;
    const result = await withTransaction(pool, async (client) => {
      caught = await createLedger({ store: store.inTransaction(client), capacity: 4 })
        .apply(entry('a', 'booked', 500))
        .catch((e: unknown) => e);
      // The other transaction lets go now: the timed-out statement runs on (PostgreSQL knows
      // nothing of the client's timeout) and books, inside this transaction.
      await holder.query('ROLLBACK');
      holder.release();
      return 'returned';
    }).catch((e: unknown) => e);
    expect(caught).toMatchObject({ code: 'ERR_STORE', operation: 'ledgerApply', retriable: true });
    expect((caught as Error).message).toMatch(/no answer from PostgreSQL within 300 ms/);
    // The transaction was not committed: the callback's value never comes back.
    expect(result).toMatchObject({ code: 'ERR_STORE', operation: 'transaction', outcome: 'not-applied' });
    expect(await balances('a')).toEqual({ cents: 1n });
    // The pool is sound afterwards.
    await withTransaction(pool, async (client) => {
      await createLedger({ store: store.inTransaction(client), capacity: 4 }).apply(entry('a', 'later', 10));
    });
    expect(await balances('a')).toEqual({ cents: 11n });
  });

  it('through withTransaction, uncaught: the timeout reaches the caller, and nothing commits', async () => {
    await createLedger({ store, capacity: 4 }).apply(entry('d', 'first', 1));
    const holder = await holdOwner('d');
    try {
      const err = await withTransaction(pool, async (client) => {
        await createLedger({ store: store.inTransaction(client), capacity: 4 }).apply(
          entry('d', 'booked', 500),
        );
      }).catch((e: unknown) => e);
      // The bound store's own error, unchanged; the connection was closed rather than rolled
      // back (a ROLLBACK would wait behind the statement, which waits for the holder).
      expect(err).toMatchObject({ code: 'ERR_STORE', operation: 'ledgerApply', outcome: 'not-applied' });
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    // The closed connection's statement may get its lock now and book: it rolls back with it.
    expect(await balances('d')).toEqual({ cents: 1n });
  });

  it('by hand: a COMMIT after the timeout rolls back, and the bound store refuses further calls', async () => {
    await createLedger({ store, capacity: 4 }).apply(entry('b', 'first', 1));
    const client = new pg.Client({ connectionString: PG_URL });
    client.on('error', () => {});
    await client.connect();
    try {
      await client.query('BEGIN');
      const tx = store.inTransaction(client);
      const holder = await holdOwner('b');
      const err = await createLedger({ store: tx, capacity: 4 })
        .apply(entry('b', 'booked', 500))
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_STORE', operation: 'ledgerApply', retriable: true });
      // Told plainly: the transaction cannot commit it, nor anything else.
      expect((err as Error).message).toMatch(/roll/i);
      const next = await tx.versionGet('orders', 'x').catch((e: unknown) => e);
      expect(next).toMatchObject({ code: 'ERR_STORE', operation: 'versionGet', outcome: 'not-applied' });
      await holder.query('ROLLBACK');
      holder.release();
      // A caller that commits anyway gets PostgreSQL's answer to an aborted transaction.
      const commit = await client.query('COMMIT');
      expect(commit.command).toBe('ROLLBACK');
      // The client is sound again for the next transaction.
      await client.query('BEGIN');
      expect(await store.inTransaction(client).versionGet('orders', 'x')).toBeUndefined();
      await client.query('ROLLBACK');
    } finally {
      await client.end().catch(() => {});
    }
    expect(await balances('b')).toEqual({ cents: 1n });
  });
});

describe('a connection lost while COMMIT runs', () => {
  const schema = runSchema('commitlost');
  const application = `onceflow_commitlost_${process.pid}`;
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2, application_name: application });
  pool.on('error', () => {});
  const admin = testPool(2);
  const store = createPostgresStore({ pool, schema });

  beforeAll(async () => {
    await migrate({ pool: admin, schema });
    // A commit-time trigger that waits: COMMIT runs it, so the test can end the backend then.
    await admin.query(`CREATE TABLE "${schema}".slow_commit (id int)`);
    await admin.query(
      `CREATE FUNCTION "${schema}".slow() RETURNS trigger LANGUAGE plpgsql AS
         $$BEGIN PERFORM pg_sleep(60); RETURN NULL; END$$`,
    );
    await admin.query(
      `CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON "${schema}".slow_commit
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "${schema}".slow()`,
    );
  });
  afterAll(async () => {
    await dropSchema(admin, schema);
    await pool.end();
    await admin.end();
  });

  it('the backend terminated during COMMIT (57P01): withTransaction says unknown', async () => {
    let pid = 0;
    const running = withTransaction(pool, async (client) => {
      pid = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      await client.query(`INSERT INTO "${schema}".slow_commit VALUES (1)`);
      await createLedger({ store: store.inTransaction(client), capacity: 4 }).apply({
        owner: 'c',
        signature: 'c1',
        deltas: { cents: 5 },
      });
    }).catch((e: unknown) => e);
    await until(async () => {
      const { rows } = await admin.query(
        `SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query = 'COMMIT'`,
        [pid],
      );
      return rows.length === 1;
    }, 'the COMMIT runs its trigger');
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const err = await running;
    expect(err).toMatchObject({
      code: 'ERR_STORE',
      operation: 'transaction',
      outcome: 'unknown',
      retriable: true,
    });
    expect((err as Error).cause).toMatchObject({ code: '57P01' });
  });
});

describe('migrate, timed out', () => {
  const admin = testPool(4);
  const schemas: string[] = [];
  afterAll(async () => {
    for (const s of schemas) await dropSchema(admin, s);
    await admin.end();
  });
  const version = async (schema: string) =>
    Number(
      (await admin.query(`SELECT coalesce(max(version), 0) AS v FROM "${schema}".migrations`)).rows[0].v,
    );

  it('before its COMMIT (another migration holds the lock): not-applied, and nothing lands', async () => {
    const schema = runSchema('mig_lock');
    schemas.push(schema);
    const holder = await admin.connect();
    try {
      await holder.query('BEGIN');
      // The lock migrate takes (migrate.ts LOCK_CLASS, the schema's hash).
      await holder.query('SELECT pg_advisory_xact_lock($1::int4, hashtext($2))', [0x6f6e6365, schema]);
      const pool = testPool(1);
      try {
        const err = await migrate({ pool, schema, timeout: '300ms' }).catch((e: unknown) => e);
        expect(err).toMatchObject({
          code: 'ERR_STORE',
          operation: 'migrate',
          outcome: 'not-applied',
          retriable: true,
        });
        expect((err as Error).message).toMatch(/idempotent/);
      } finally {
        await pool.end();
      }
      await holder.query('ROLLBACK');
    } finally {
      holder.release();
    }
    const exists = await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    expect(exists.rows).toEqual([]);
  });

  it('during its COMMIT: unknown, and the COMMIT does land', async () => {
    const schema = runSchema('mig_commit');
    schemas.push(schema);
    // A schema with an empty migrations table whose rows' commit-time trigger waits on an
    // advisory lock the test holds: the migration's COMMIT runs until the test lets go.
    await admin.query(`CREATE SCHEMA "${schema}"`);
    await admin.query(
      `CREATE TABLE "${schema}".migrations (version int PRIMARY KEY, name text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    );
    await admin.query(
      `CREATE FUNCTION "${schema}".wait() RETURNS trigger LANGUAGE plpgsql AS
         $$BEGIN PERFORM pg_advisory_xact_lock(hashtext('${schema}')); RETURN NULL; END$$`,
    );
    await admin.query(
      `CREATE CONSTRAINT TRIGGER wait AFTER INSERT ON "${schema}".migrations
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "${schema}".wait()`,
    );
    const holder = await admin.connect();
    const pool = testPool(1);
    pool.on('error', () => {});
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(hashtext($1))', [schema]);
      // 3 s: the statements before COMMIT take milliseconds; the COMMIT waits on the test.
      const err = await migrate({ pool, schema, timeout: '3s' }).catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'ERR_STORE',
        operation: 'migrate',
        outcome: 'unknown',
        retriable: true,
      });
      expect((err as Error).message).toMatch(/idempotent/);
      await holder.query('ROLLBACK');
    } finally {
      holder.release();
      await pool.end();
    }
    // The COMMIT the client gave up on completes on the server.
    await until(async () => (await version(schema)) === SCHEMA_VERSION, 'the migration committed');
    // And migrating again is safe: nothing left to apply.
    const again = testPool(1);
    try {
      await admin.query(`DROP TRIGGER wait ON "${schema}".migrations`);
      expect((await migrate({ pool: again, schema })).applied).toEqual([]);
    } finally {
      await again.end();
    }
  });
});
