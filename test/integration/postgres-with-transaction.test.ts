// withTransaction, as docs/postgres.md shows it: the docs' `placeOrder` runs here word for word
// (a test below holds the two texts equal), with the backend terminated from another connection
// while the transaction runs. The process must live (the client's 'error' is heard), the call
// must reject with a typed error that carries the driver's, and nothing may be half-written.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, defineSignature } from '../../src/index.js';
import { createPostgresStore, migrate, withTransaction } from '../../src/postgres/index.js';
import { dropSchema, PG_URL, runSchema } from './pg-env.js';

describe('withTransaction, the docs example under a terminated backend', () => {
  const schema = runSchema('wtx');
  // The transaction's pool, named so the test can find its backend (and only its) from outside.
  const application = `onceflow_wtx_${process.pid}`;
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2, application_name: application });
  const admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
  const store = createPostgresStore({ pool, schema });

  // ---- docs/postgres.md, "Inside your transaction", from here ----
  // Order ids come from one increasing sequence, so each booking carries its id as its `order`.
  const booking = defineSignature([
    ['order', 'int'],
    ['cents', 'int'],
  ]);
  type Order = { id: number; customer: string; cents: number };

  /** Books an order and its payment together, or neither. `charge` calls the payment provider. */
  async function placeOrder(order: Order, charge: () => Promise<void>): Promise<void> {
    await withTransaction(pool, async (client) => {
      await client.query(`INSERT INTO "${schema}".orders (id, customer, cents) VALUES ($1, $2, $3)`, [
        order.id,
        order.customer,
        order.cents,
      ]);
      // 4: a retry of one of the customer's last 4 orders is a `duplicate`; an older one is `stale`
      // (its `order` is at or below the horizon), never booked twice, whatever the capacity.
      const ledger = createLedger({ store: store.inTransaction(client), capacity: 4 });
      await ledger.apply({
        owner: order.customer,
        signature: booking({ order: order.id, cents: order.cents }),
        order: order.id,
        deltas: { cents: order.cents },
      });
      await charge();
    });
  }
  // ---- to here ----

  beforeAll(async () => {
    await migrate({ pool: admin, schema });
    await admin.query(
      `CREATE TABLE "${schema}".orders (id int PRIMARY KEY, customer text NOT NULL, cents int NOT NULL)`,
    );
  });
  afterAll(async () => {
    await dropSchema(admin, schema);
    await pool.end();
    await admin.end();
  });

  /** Terminates the transaction's backend (idle in its transaction) from another connection. */
  async function terminate(): Promise<void> {
    const { rows } = await admin.query(
      `SELECT pid, pg_terminate_backend(pid) AS done FROM pg_stat_activity
        WHERE application_name = $1 AND state = 'idle in transaction'`,
      [application],
    );
    expect(rows).toMatchObject([{ done: true }]);
    // Until the backend is gone: its FATAL notice went to the client before it exited.
    for (let i = 0; i < 1000; i++) {
      const left = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [rows[0].pid]);
      if (left.rows.length === 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  const written = async (id: number, customer: string) => ({
    order: (await admin.query(`SELECT cents FROM "${schema}".orders WHERE id = $1`, [id])).rows.length,
    balances: await createLedger({ store, capacity: 4 }).balances(customer),
  });

  it("is the docs' placeOrder, word for word", () => {
    const docs = readFileSync(new URL('../../docs/postgres.md', import.meta.url), 'utf8');
    const here = readFileSync(new URL(import.meta.url), 'utf8');
    // The code from the comment above `booking` to the end of `placeOrder`, compared without its
    // layout (white space, trailing commas): the formatter lays the copy here out its own way.
    const code = (text: string) => {
      const start = text.indexOf('// Order ids come from one increasing sequence');
      const end = text.indexOf('await charge();', start);
      return text
        .slice(start, end)
        .replace(/,(\s*[\])}])/g, '$1')
        .replace(/\s+/g, '');
    };
    expect(code(docs).length).toBeGreaterThan(500);
    expect(code(here)).toBe(code(docs));
  });

  it("the README's PostgreSQL example checks that a replay after five newer orders is not booked", () => {
    // test/e2e/readme.test.ts runs the block; this holds that the check stays in it.
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const start = readme.indexOf('## On PostgreSQL, inside your own transaction');
    const block = readme.slice(start, readme.indexOf('```\n', readme.indexOf('```ts', start) + 5));
    expect(block).toMatch(/order: id/);
    expect(block).toMatch(
      /for \(const id of \[3, 4, 5, 6, 7\]\) await book\(id, 100\);[^\n]*\nassert\.equal\(await book\(1, 500\), 'stale'\);/,
    );
  });

  it('commits, and rolls back what the payment provider refused', async () => {
    await placeOrder({ id: 1, customer: 'alice', cents: 500 }, async () => {});
    const declined = await placeOrder({ id: 2, customer: 'alice', cents: 700 }, async () => {
      throw new Error('declined');
    }).catch((err: unknown) => err);
    expect(declined).toMatchObject({ message: 'declined' }); // the callback's own error, unchanged
    expect(await written(1, 'alice')).toEqual({ order: 1, balances: { cents: 500n } });
    expect(await written(2, 'alice')).toEqual({ order: 0, balances: { cents: 500n } });
  });

  it('the backend terminated while the payment runs: no crash, ERR_STORE with the cause, nothing written', async () => {
    const err = await placeOrder({ id: 3, customer: 'bob', cents: 300 }, terminate).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_STORE', operation: 'transaction', retriable: true });
    // The termination arrived before COMMIT was sent (terminate waits for the backend to go):
    // the server rolled the transaction back.
    expect(err).toMatchObject({ outcome: 'not-applied' });
    expect((err as Error).cause).toMatchObject({ code: '57P01' });
    expect(await written(3, 'bob')).toEqual({ order: 0, balances: {} });
    // The broken client was destroyed, not pooled: the next order runs on a sound one.
    await placeOrder({ id: 3, customer: 'bob', cents: 300 }, async () => {});
    expect(await written(3, 'bob')).toEqual({ order: 1, balances: { cents: 300n } });
  });

  it('the backend terminated, then the payment fails too: a typed error still, nothing written', async () => {
    const err = await placeOrder({ id: 4, customer: 'carol', cents: 400 }, async () => {
      await terminate();
      throw new Error('declined');
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_STORE', operation: 'transaction', outcome: 'not-applied' });
    // The server's 57P01, whether the client heard it before the ROLLBACK went out or in its answer.
    expect((err as Error).cause).toMatchObject({ code: '57P01' });
    expect(await written(4, 'carol')).toEqual({ order: 0, balances: {} });
  });

  it("a bound store's ERR_STORE after the termination reaches the caller, not hidden by the ROLLBACK", async () => {
    const err = await withTransaction(pool, async (client) => {
      await client.query(`INSERT INTO "${schema}".orders (id, customer, cents) VALUES (5, 'dave', 100)`);
      await terminate();
      await createLedger({ store: store.inTransaction(client), capacity: 4 }).apply({
        owner: 'dave',
        signature: booking({ order: 5, cents: 100 }),
        order: 5,
        deltas: { cents: 100 },
      });
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_STORE', operation: 'ledgerApply', outcome: 'not-applied' });
    expect(await written(5, 'dave')).toEqual({ order: 0, balances: {} });
  });

  it('a COMMIT that PostgreSQL answers with ROLLBACK (the callback swallowed an error) is ERR_STORE', async () => {
    const err = await withTransaction(pool, async (client) => {
      await client.query(`INSERT INTO "${schema}".orders (id, customer, cents) VALUES (6, 'erin', 100)`);
      await client.query('SELECT 1/0').catch(() => {}); // the transaction is aborted from here
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_STORE', operation: 'transaction', outcome: 'not-applied' });
    expect(await written(6, 'erin')).toEqual({ order: 0, balances: {} });
  });

  it("a statement of the callback that the server refuses is ERR_STORE with the server's error", async () => {
    await placeOrder({ id: 7, customer: 'frank', cents: 100 }, async () => {});
    const err = await placeOrder({ id: 7, customer: 'frank', cents: 100 }, async () => {}).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'ERR_STORE', operation: 'transaction', retriable: false });
    expect((err as Error).cause).toMatchObject({ code: '23505' }); // the order's primary key
    expect(await written(7, 'frank')).toEqual({ order: 1, balances: { cents: 100n } });
  });
});
