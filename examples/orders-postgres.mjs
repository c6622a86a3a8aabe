// An order service on PostgreSQL: the order row, the customer's payment booking and the
// idempotency record of the request commit together, or not at all.
// Run: npm run build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node examples/orders-postgres.mjs
import assert from 'node:assert/strict';
import { createIdempotency, createLedger, defineSignature } from 'onceflow';
import { createPostgresStore, withTransaction } from 'onceflow/postgres';
import pg from 'pg';

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
});
const schema = `example_orders_${process.pid}`; // one schema per application
const store = createPostgresStore({ pool, schema });
await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
await pool.query(
  `CREATE TABLE "${schema}".orders (id int PRIMARY KEY, customer text NOT NULL, cents int NOT NULL)`,
);

// Order ids come from one increasing sequence: each booking carries its id as its `order`.
const booking = defineSignature([
  ['order', 'int'],
  ['cents', 'int'],
]);

/**
 * POST /orders with an Idempotency-Key: one order, one booking, whatever the retries.
 * withTransaction checks a client out, listens for its 'error' (a connection lost mid-transaction
 * is a typed ERR_STORE, never a crash), BEGINs, and COMMITs, or ROLLBACKs when the callback throws.
 */
function placeOrder(idempotencyKey, order) {
  return withTransaction(pool, async (client) => {
    const tx = store.inTransaction(client);
    const idem = createIdempotency({ store: tx, name: 'orders', lease: '30s', ttl: '24h' });
    const r = await idem.run({ key: idempotencyKey, payload: order }, async () => {
      await client.query(`INSERT INTO "${schema}".orders (id, customer, cents) VALUES ($1, $2, $3)`, [
        order.id,
        order.customer,
        order.cents,
      ]);
      // 4: a retry of one of the customer's last 4 orders is a `duplicate`; an older one is
      // `stale` (its `order` is at or below the horizon), never booked twice.
      await createLedger({ store: tx, capacity: 4 }).apply({
        owner: order.customer,
        signature: booking({ order: order.id, cents: order.cents }),
        order: order.id,
        deltas: { cents: -order.cents },
      });
      return { order: order.id, status: 'placed' };
    });
    if (order.cents > 10_000) throw new Error('card declined'); // the payment failed after the writes
    return r;
  });
}

const order = { id: 1, customer: 'alice', cents: 1250 };
// The client retries the same request three times (a timeout it did not see the end of).
const answers = [];
for (let i = 0; i < 3; i++) answers.push((await placeOrder('key-1', order)).outcome);
console.log(answers.join(' ')); // executed replayed replayed
assert.deepEqual(answers, ['executed', 'replayed', 'replayed']);

// A declined order rolls back its row, its booking and its idempotency record together: a retry
// of the same key runs again (here it is declined again).
await assert.rejects(placeOrder('key-2', { id: 2, customer: 'alice', cents: 99_000 }), /card declined/);
await assert.rejects(placeOrder('key-2', { id: 2, customer: 'alice', cents: 99_000 }), /card declined/);

const ledger = createLedger({ store, capacity: 4 });
assert.deepEqual(await ledger.balances('alice'), { cents: -1250n });
const rows = await pool.query(`SELECT id FROM "${schema}".orders ORDER BY id`);
assert.deepEqual(
  rows.rows.map((r) => r.id),
  [1],
);
console.log('one order, one booking of', (await ledger.balances('alice')).cents, 'cents');

await pool.query(`DROP SCHEMA "${schema}" CASCADE`); // the example's own schema
await pool.end();
