import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { createPostgresStore, migrate } from '../../src/postgres/index.js';
import { type StartedPostgres, startPostgres } from '../../src/testing/index.js';
import type { Delivery } from '../property/settlement-log.js';
import { buildLog, truth } from '../support/worker-log.js';
import { dropSchema, PG_URL, runSchema } from './pg-env.js';

const run = promisify(execFile);
const worker = fileURLToPath(new URL('./fixtures/pg-apply-worker.mjs', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));
const WORKERS = 4;

type Counts = { applied: number; duplicate: number; stale: number; retries: number };

async function runWorkers(
  target: { url: string; schema: string; paceMs?: number },
  players: Delivery[][],
  chaos: (done: () => boolean) => Promise<void> = async () => {},
): Promise<Counts[]> {
  const dir = mkdtempSync(join(tmpdir(), 'onceflow-pglog-'));
  const logFile = join(dir, 'log.json');
  writeFileSync(logFile, JSON.stringify(players));
  let finished = false;
  try {
    const workers = Array.from({ length: WORKERS }, (_, i) =>
      run(process.execPath, [worker, JSON.stringify({ ...target, logFile, seed: 1000 + i })], {
        cwd: root,
        timeout: 180_000,
      }),
    );
    const all = Promise.all(workers).finally(() => {
      finished = true;
    });
    const [results] = await Promise.all([all, chaos(() => finished)]);
    return results.map((r) => JSON.parse(r.stdout) as Counts);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function verify(pool: pg.Pool, schema: string, players: Delivery[][], counts: Counts[]) {
  const t = truth(players);
  const ledger = createLedger({ store: createPostgresStore({ pool, schema }), capacity: 4 });
  // A statement whose commit landed but whose reply was lost is retried and answers duplicate or
  // stale: applied counts at most the truth; the journal and balances prove exactly once.
  expect(counts.reduce((n, c) => n + c.applied, 0)).toBeLessThanOrEqual(t.count);
  const delivered = players.flat().length * WORKERS;
  expect(counts.reduce((n, c) => n + c.applied + c.duplicate + c.stale, 0)).toBe(delivered);
  for (const [player, balance] of t.balances) {
    expect(await ledger.balances(player), player).toEqual({ coins: balance });
    const journal = await ledger.journal({ owner: player });
    expect(journal.map((e) => e.signature).sort(), player).toEqual(
      [...(t.signatures.get(player) ?? [])].sort(),
    );
    // Seqs 1..n with no gap: no apply half-booked.
    expect(journal.map((e) => e.seq)).toEqual(journal.map((_, i) => i + 1));
  }
  for (const [room, total] of t.rooms) expect(await ledger.totals(room), room).toEqual({ coins: total });
  expect((await ledger.journal()).length).toBe(t.count);
}

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
    const counts = await runWorkers({ url: PG_URL, schema }, players);
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
    const counts = await runWorkers({ url: server.url, schema, paceMs: 1 }, players, async (done) => {
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
    });
    expect(restarts).toBe(1);
    expect(terminated).toBeGreaterThan(0);
    expect(counts.reduce((n, c) => n + c.retries, 0)).toBeGreaterThan(0);
    await verify(admin, schema, players, counts);
  });
});
