// The cyclic-result suite (test/support/model-suites/idempotency-cyclic.ts) on PostgreSQL.
import { afterAll } from 'vitest';
import { createPostgresStore } from '../../src/postgres/index.js';
import { cyclicResultSuite } from '../support/model-suites/idempotency-cyclic.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';

const pool = testPool(2);
const schema = runSchema('idem_cyclic');
afterAll(async () => {
  await dropSchema(pool, schema);
  await pool.end();
});

cyclicResultSuite({ label: 'the Postgres store', store: () => createPostgresStore({ pool, schema }) });
