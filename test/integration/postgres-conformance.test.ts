import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/postgres/index.js';
import { type StartedPostgres, startPostgres } from '../../src/testing/index.js';
import { conformanceSuite, outageConformance } from '../support/model-suites/conformance.js';
import { testSchema } from './pg-env.js';

const { pool, schema } = testSchema('conf');
conformanceSuite({
  label: 'Postgres store',
  store: createPostgresStore({ pool, schema }),
  retention: (n) => createPostgresStore({ pool, schema, journal: { maxEntriesPerOwner: n } }),
  prefix: 'c:',
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
        const results = await outageConformance(store, outage);
        expect(crashes).toBe(results.length);
      } finally {
        await pool?.end().catch(() => {});
        await server?.stop();
      }
    },
  );
});
