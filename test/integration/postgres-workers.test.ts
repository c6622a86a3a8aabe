import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, migrate } from '../../src/postgres/index.js';
import { type StartedPostgres, startPostgres } from '../../src/testing/index.js';
import type { Delivery } from '../property/settlement-log.js';
import { buildLog } from '../support/worker-log.js';
import { type Counts, runWorkers, verifyExactlyOnce, WORKERS } from '../support/worker-run.js';
import { dropSchema, PG_URL, runSchema } from './pg-env.js';

type PgCounts = Counts & { retries: number };

const verify = (pool: pg.Pool, schema: string, players: Delivery[][], counts: Counts[]) =>
  verifyExactlyOnce(createPostgresStore({ pool, schema }), players, counts);

/** Terminates every backend of the workers (application_name), from an admin connection. */
async function terminateWorkers(admin: pg.Pool): Promise<number> {
  const r = await admin.query(
    "SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'onceflow-worker' AND pid <> pg_backend_pid()) t",
  );
  return r.rows[0].n as number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe(`${WORKERS} OS processes apply shuffled copies of one delivery log to PostgreSQL`, () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  });

  it('on the shared server: balances, journal and per-room totals are exact', async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    const schema = runSchema('workers');
    cleanups.push(async () => {
      await dropSchema(pool, schema);
      await pool.end();
    });
    // Migrated ahead, as a deploy would: the workers then race on the ledger, not on DDL.
    await migrate({ pool, schema });
    const players = buildLog(1);
    const counts = await runWorkers<PgCounts>(
      'pg-apply-worker.mjs',
      { url: PG_URL, schema },
      players,
      180_000,
    );
    await verify(pool, schema, players, counts);
  });

  it("on a server of the test's own, with the workers' backends terminated and an immediate-mode restart mid-run: nothing lost, nothing twice", async () => {
    const server: StartedPostgres = await startPostgres();
    const admin = new pg.Pool({ connectionString: server.url, max: 1 });
    admin.on('error', () => {});
    cleanups.push(async () => {
      await admin.end().catch(() => {});
      await server.stop();
    });
    const schema = runSchema('workers_faults');
    // The workers migrate on first use, concurrently (the advisory lock serialises them).
    const players = buildLog(3);
    let terminated = 0;
    let restarts = 0;
    const counts = await runWorkers<PgCounts>(
      'pg-apply-worker.mjs',
      { url: server.url, schema, paceMs: 1 },
      players,
      180_000,
      async (done) => {
        for (let tick = 0; !done(); tick++) {
          await sleep(150);
          if (done()) break;
          if (tick === 4) {
            await server.kill();
            await sleep(200);
            await server.restart();
            restarts++;
          } else {
            terminated += await terminateWorkers(admin).catch(() => 0);
          }
        }
      },
    );
    expect(restarts).toBe(1);
    expect(terminated).toBeGreaterThan(0);
    expect(counts.reduce((n, c) => n + c.retries, 0)).toBeGreaterThan(0);
    await verify(admin, schema, players, counts);
  });
});
