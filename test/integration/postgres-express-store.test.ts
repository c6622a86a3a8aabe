// express-rate-limit's store cases (test/support/express-store-cases.ts) against OnceflowStore on
// PostgreSQL: a schema of this run's own, a fake clock passed in.

import { FakeClock } from '../../src/core/clock.js';
import { createPostgresStore } from '../../src/postgres/index.js';
import { storeSuite, T0 } from '../support/express-store-cases.js';
import { testSchema } from './pg-env.js';

const { pool, schema } = testSchema('express_store');
const store = createPostgresStore({ pool, schema });
let run = 0;

// One store (one schema, migrated once); each case counts under a name of its own.
storeSuite({
  name: 'postgres',
  make: () => ({ store, clock: new FakeClock(T0), passClock: true, name: `case-${run++}` }),
});
