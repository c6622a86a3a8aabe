// An order service on PostgreSQL: the order row, the customer's payment booking and the
// idempotency record of the request commit together, or not at all.
// Run: npm run build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node examples/orders-postgres.mjs
import assert from 'node:assert/strict';
import { createIdempotency, createLedger } from 'onceflow';
import { createPostgresStore } from 'onceflow/postgres';
import pg from 'pg';

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
});
const schema = `example_orders_${process.pid}`; // one schema per application
const store = createPostgresStore({ pool, schema });
await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
await pool.query(
  `CREATE TABLE "${schema}".orders (id text PRIMARY KEY, customer text NOT NULL, cents int NOT NULL)`,
);

/** POST /orders with an Idempotency-Key: one order, one booking, whatever the retries. */
async function placeOrder(idempotencyKey, order) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const tx = store.inTransaction(client);
    const idem = createIdempotency({ store: tx, name: 'orders', lease: '30s', ttl: '24h' });
    const r = await idem.run({ key: idempotencyKey, payload: order }, async () => {
      await client.query(`INSERT INTO "${schema}".orders (id, customer, cents) VALUES ($1, $2, $3)`, [
        order.id,
        order.customer,
        order.cents,
      ]);
      await createLedger({ store: tx, capacity: 4 }).apply({
        owner: order.customer,
        signature: `order:${order.id}`,
        deltas: { cents: -order.cents },
      });
      return { order: order.id, status: 'placed' };
    });
    if (order.cents > 10_000) throw new Error('card declined'); // the payment failed after the writes
    await client.query('COMMIT');
    return r;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  } finally {
    client.release();
  }
}

const order = { id: 'o-1', customer: 'alice', cents: 1250 };
// The client retries the same request three times (a timeout it did not see the end of).
const answers = [];
for (let i = 0; i < 3; i++) answers.push((await placeOrder('key-1', order)).outcome);
console.log(answers.join(' ')); // executed replayed replayed
assert.deepEqual(answers, ['executed', 'replayed', 'replayed']);

// A declined order rolls back its row, its booking and its idempotency record together: a retry
// of the same key runs again (here it is declined again).
await assert.rejects(placeOrder('key-2', { id: 'o-2', customer: 'alice', cents: 99_000 }), /card declined/);
await assert.rejects(placeOrder('key-2', { id: 'o-2', customer: 'alice', cents: 99_000 }), /card declined/);

const ledger = createLedger({ store, capacity: 4 });
assert.deepEqual(await ledger.balances('alice'), { cents: -1250n });
const rows = await pool.query(`SELECT id FROM "${schema}".orders ORDER BY id`);
assert.deepEqual(
  rows.rows.map((r) => r.id),
  ['o-1'],
);
console.log('one order, one booking of', (await ledger.balances('alice')).cents, 'cents');

await pool.query(`DROP SCHEMA "${schema}" CASCADE`); // the example's own schema
await pool.end();
