import { createPostgresStore } from '../../src/postgres/index.js';
import { cyclicResultSuite } from '../support/model-suites/idempotency-cyclic.js';
import { testSchema } from './pg-env.js';

const { pool, schema } = testSchema('idem_cyclic', 2);

cyclicResultSuite({ label: 'the Postgres store', store: () => createPostgresStore({ pool, schema }) });
