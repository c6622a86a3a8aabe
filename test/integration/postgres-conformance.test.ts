import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/postgres/index.js';
import { conformance, type StartedPostgres, startPostgres } from '../../src/testing/index.js';
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
    if (suite.needs === 'outage') continue; // below, on a server of this file's own

    for (const c of suite.cases) {
      it(`${suite.name}: ${c.name}: ${c.rule}`, async () => {
        const result = await conformance.runCase(store, c, { prefix: 'c:', require: true, retention });
        expect(result.failures).toEqual([]);
      });
    }
  }
});

describe('conformance: Postgres store cut off its server (limiter-outage)', () => {
  // A server of this test's own: the outage is a crash of it (immediate shutdown, as a killed
  // server), the end of the outage its restart with crash recovery. Never the shared server.
  it(
    'rejects with a StoreError while the server is down, and charges nothing once it is back',
    {
      timeout: 180_000,
    },
    async () => {
      let server: StartedPostgres | undefined;
      let pool: pg.Pool | undefined;
      try {
        server = await startPostgres();
        const own = server;
        pool = new pg.Pool({ connectionString: own.url, max: 2 });
        // Idle connections the crash ends are reported here; the pool drops them and connects anew.
        pool.on('error', () => {});
        const store = createPostgresStore({ pool, schema: 'conf_outage' });
        let crashes = 0;
        const outage = {
          begin: async () => {
            await own.kill();
            crashes++;
          },
          end: () => own.restart(),
        };
        const results = await conformance.run(store, { suites: ['limiter-outage'], outage, require: true });
        expect(results.length).toBeGreaterThan(0);
        expect(results.flatMap((r) => r.failures)).toEqual([]);
        expect(crashes).toBe(results.length);
      } finally {
        await pool?.end().catch(() => {});
        await server?.stop();
      }
    },
  );
});
