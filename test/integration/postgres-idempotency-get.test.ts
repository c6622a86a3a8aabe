// idempotencyGet (the read behind `idempotency.seen` and its Bloom pre-check) on the real
// PostgreSQL: a plain SELECT judged on the database's clock, the cases of
// test/support/idempotency-get-cases.ts as on the memory store and Redis.
import { afterAll, describe } from 'vitest';
import { createPostgresStore } from '../../src/postgres/index.js';
import { idempotencyGetCases } from '../support/idempotency-get-cases.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';

describe('idempotencyGet on PostgreSQL', () => {
  const pool = testPool(2);
  const schema = runSchema('idem_get');
  const store = createPostgresStore({ pool, schema });
  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });
  idempotencyGetCases(
    () => store,
    (n) => n,
  );
});
