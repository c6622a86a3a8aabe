import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/postgres/index.js';
import { conformance } from '../../src/testing/index.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';

describe('conformance: Postgres store', () => {
  const pool = testPool(4);
  const schema = runSchema('conf');
  const store = createPostgresStore({ pool, schema });
  const retention = (n: number) => createPostgresStore({ pool, schema, journal: { maxEntriesPerOwner: n } });
  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  for (const suite of conformance.suites) {
    // The outage suite cuts the store off its server: postgres-faults.test.ts does that.
    if (suite.needs === 'outage') continue;
    for (const c of suite.cases) {
      it(`${suite.name}: ${c.name}: ${c.rule}`, async () => {
        const result = await conformance.runCase(store, c, { prefix: 'c:', require: true, retention });
        expect(result.failures).toEqual([]);
      });
    }
  }
});
