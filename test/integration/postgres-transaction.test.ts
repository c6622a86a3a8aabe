// `store.inTransaction(client)`: store operations inside the caller's own transaction commit or
// roll back with its business write (DESIGN §3.7): the one place where "record + effect" is atomic
// for an arbitrary effect. A ledger apply, a version-gate upsert and an idempotency record are
// made in the caller's transaction next to a business INSERT.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { createPostgresStore, migrate, type TransactionStore } from '../../src/postgres/index.js';
import { dropSchema, PG_URL, runSchema, testPool } from './pg-env.js';

describe('Postgres inTransaction', () => {
  const pool = testPool(4);
  const schema = runSchema('tx');
  const store = createPostgresStore({ pool, schema });
  const orders = `"${schema}".tx_orders`;
  beforeAll(async () => {
    await migrate({ pool, schema });
    await pool.query(`CREATE TABLE ${orders} (id text PRIMARY KEY, amount int NOT NULL)`);
  });
  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  // A client of its own (not the pool's: a terminated one must not go back to a pool), in BEGIN.
  async function begun(): Promise<{ client: pg.Client; tx: TransactionStore; pid: number }> {
    const client = new pg.Client({ connectionString: PG_URL });
    // A terminated connection reports on the client; the test reads the failure from the query.
    client.on('error', () => {});
    await client.connect();
    const pid = Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    await client.query('BEGIN');
    return { client, tx: store.inTransaction(client), pid };
  }

  // The business write and the store's records of one order, from outside the transaction.
  async function seen(id: string) {
    const row = await pool.query(`SELECT amount FROM ${orders} WHERE id = $1`, [id]);
    const idem = await pool.query(
      `SELECT status FROM "${schema}".idempotency WHERE name = 'orders' AND key = $1`,
      [id],
    );
    const balances = await store.ledgerBalances('default', id);
    const journal = await store.ledgerJournal('default', { owner: id });
    return {
      order: row.rows[0]?.amount ?? null,
      version: (await store.versionGet('orders', id)) ?? null,
      record: idem.rows[0]?.status ?? null,
      coins: balances['coins'] ?? null,
      journal: journal.map((e) => e.signature),
    };
  }

  async function writeAll(client: pg.Client, tx: TransactionStore, id: string) {
    await client.query(`INSERT INTO ${orders} (id, amount) VALUES ($1, 5)`, [id]);
    // The ledger through the bound store: the same createLedger, the caller's transaction.
    const ledger = createLedger({ store: tx, capacity: 4 });
    const applied = await ledger.apply({
      owner: id,
      signature: `order:${id}`,
      deltas: { coins: 5 },
      scope: 'shop',
    });
    expect(applied).toMatchObject({ outcome: 'applied', seq: 1, balances: { coins: 5n } });
    // Inside the transaction a repeat is a duplicate, as anywhere.
    expect((await ledger.apply({ owner: id, signature: `order:${id}`, deltas: { coins: 5 } })).outcome).toBe(
      'duplicate',
    );
    expect(await tx.versionUpsert('orders', id, '1', '{"amount":5}')).toEqual({
      outcome: 'applied',
      version: '1',
    });
    const begin = await tx.idempotencyBegin({
      name: 'orders',
      key: id,
      payloadHash: '',
      token: 'tx',
      leaseMs: 60_000,
    });
    expect(begin).toMatchObject({ outcome: 'acquired', takeover: false });
    expect(await tx.idempotencyComplete('orders', id, 'tx', '{"charged":5}', 60_000)).toBe(true);
  }

  const none = { order: null, version: null, record: null, coins: null, journal: [] };

  it('ROLLBACK leaves neither the business write nor the records', async () => {
    const { client, tx } = await begun();
    try {
      await writeAll(client, tx, 'rolled-back');
      // Inside, all of it is there.
      expect(await tx.versionGet('orders', 'rolled-back')).toEqual({ version: '1', value: '{"amount":5}' });
      await client.query('ROLLBACK');
    } finally {
      await client.end();
    }
    expect(await seen('rolled-back')).toEqual(none);
    // The key is free again: a begin acquires it afresh.
    const again = await store.idempotencyBegin({
      name: 'orders',
      key: 'rolled-back',
      payloadHash: '',
      token: 'n',
      leaseMs: 1000,
    });
    expect(again).toMatchObject({ outcome: 'acquired', takeover: false });
  });

  it('COMMIT leaves both', async () => {
    const { client, tx } = await begun();
    try {
      await writeAll(client, tx, 'committed');
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
    expect(await seen('committed')).toEqual({
      order: 5,
      version: { version: '1', value: '{"amount":5}' },
      record: 'completed',
      coins: 5n,
      journal: ['order:committed'],
    });
    // The same entry again, after the commit: a duplicate, not a second booking.
    const ledger = createLedger({ store, capacity: 4 });
    expect(
      (await ledger.apply({ owner: 'committed', signature: 'order:committed', deltas: { coins: 5 } }))
        .outcome,
    ).toBe('duplicate');
    expect(await ledger.totals('shop')).toEqual({ coins: 5n });
    const replay = await store.idempotencyBegin({
      name: 'orders',
      key: 'committed',
      payloadHash: '',
      token: 'n',
      leaseMs: 1000,
    });
    expect(replay).toMatchObject({ outcome: 'completed', value: '{"charged":5}' });
  });

  it('the connection terminated between the business write and the records leaves neither', async () => {
    const { client, tx, pid } = await begun();
    try {
      await client.query(`INSERT INTO ${orders} (id, amount) VALUES ($1, 5)`, ['cut-between']);
      await pool.query('SELECT pg_terminate_backend($1)', [pid]);
      const err = await tx.versionUpsert('orders', 'cut-between', '1', 'v').catch((e: unknown) => e);
      // Whatever failed inside the caller's transaction rolled back with it.
      expect(err).toMatchObject({ code: 'ERR_STORE', operation: 'versionUpsert', outcome: 'not-applied' });
    } finally {
      await client.end().catch(() => {});
    }
    expect(await seen('cut-between')).toEqual(none);
  });

  it('the connection terminated after both, before COMMIT, leaves neither', async () => {
    const { client, tx, pid } = await begun();
    try {
      await writeAll(client, tx, 'cut-before-commit');
      await pool.query('SELECT pg_terminate_backend($1)', [pid]);
      await expect(client.query('COMMIT')).rejects.toThrow();
    } finally {
      await client.end().catch(() => {});
    }
    expect(await seen('cut-before-commit')).toEqual(none);
  });

  it('a record made inside is invisible to others until commit; a racing begin waits for the outcome', async () => {
    for (const end of ['COMMIT', 'ROLLBACK'] as const) {
      const id = `visible-${end}`;
      const { client, tx } = await begun();
      try {
        await client.query(`INSERT INTO ${orders} (id, amount) VALUES ($1, 7)`, [id]);
        const mine = await tx.idempotencyBegin({
          name: 'orders',
          key: id,
          payloadHash: 'h',
          token: 'in',
          leaseMs: 60_000,
        });
        expect(mine).toMatchObject({ outcome: 'acquired' });
        // Others see no row and no order yet.
        expect(await seen(id)).toEqual(none);
        // A begin from outside cannot take the key meanwhile: it waits on the uncommitted row
        // (the primary key), then answers from what the transaction decided.
        let settled = false;
        const outside = store
          .idempotencyBegin({ name: 'orders', key: id, payloadHash: 'h', token: 'out', leaseMs: 60_000 })
          .finally(() => {
            settled = true;
          });
        await new Promise((r) => setTimeout(r, 150));
        expect(settled).toBe(false);
        await client.query(end);
        const reply = await outside;
        if (end === 'COMMIT') {
          expect(reply).toMatchObject({ outcome: 'in-progress' });
          expect(await seen(id)).toEqual({ ...none, order: 7, record: 'in-progress' });
        } else {
          expect(reply).toMatchObject({ outcome: 'acquired', takeover: false });
          expect(await seen(id)).toEqual({ ...none, record: 'in-progress' });
        }
      } finally {
        await client.end();
      }
    }
  });
});
