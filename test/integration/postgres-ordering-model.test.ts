// The ordering model suite (test/support/model-suites/ordering.ts) on PostgreSQL.
import { afterAll } from 'vitest';
import { createPostgresStore } from '../../src/postgres/index.js';
import { orderingModelSuite } from '../support/model-suites/ordering.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';

const pool = testPool(2);
const schema = runSchema('ord_model');
const store = createPostgresStore({ pool, schema });
afterAll(async () => {
  await dropSchema(pool, schema);
  await pool.end();
});

orderingModelSuite(
  { label: 'the Postgres store', store: () => store },
  { gates: ['g0', 'g1'], keys: ['k0', 'k1'], checkpoints: ['c0', 'c1'], clocks: ['s0', 's1'] },
);
