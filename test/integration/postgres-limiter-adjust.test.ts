// The limiter's state operations and blocks on PostgreSQL (see test/support/limiter-adjust-checks.ts).
import { createPostgresStore } from '../../src/postgres/index.js';
import { limiterAdjustChecks } from '../support/limiter-adjust-checks.js';
import { testSchema } from './pg-env.js';

const { pool, schema } = testSchema('adjust');
limiterAdjustChecks({ label: 'PostgreSQL', store: () => createPostgresStore({ pool, schema }) });
