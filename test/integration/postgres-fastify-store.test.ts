// @fastify/rate-limit's store cases (test/support/fastify-store-cases.ts) against onceflow's
// rateLimitStore on PostgreSQL: a schema of this run's own, a fake clock passed in.
import { describe, it } from 'vitest';
import { FakeClock } from '../../src/core/clock.js';
import { rateLimitStore } from '../../src/fastify/index.js';
import { createPostgresStore } from '../../src/postgres/index.js';
import { CASES, type Ctor, T0 } from '../support/fastify-store-cases.js';
import { testSchema } from './pg-env.js';

const { pool, schema } = testSchema('fastify_store');
const store = createPostgresStore({ pool, schema });
let run = 0;

describe('rateLimitStore on postgres', () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const clock = new FakeClock(T0);
      await c.run({ make: () => rateLimitStore({ store, clock, name: `case-${++run}` }) as Ctor, clock });
    });
  }
});
