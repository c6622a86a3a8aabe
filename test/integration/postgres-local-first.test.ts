// Local-first limits on PostgreSQL (see test/support/local-first-checks.ts): leases are limiter
// takes, returns are rewards with notAfter (limiter-adjust-bounded, one statement).
import { createPostgresStore } from '../../src/postgres/index.js';
import { localFirstChecks } from '../support/local-first-checks.js';
import { testSchema } from './pg-env.js';

const { pool, schema } = testSchema('local_first');
localFirstChecks({ label: 'PostgreSQL', store: () => createPostgresStore({ pool, schema }) });
