import { createLedger } from '../index.js';
import { DemoFailure } from './failure.js';
import { SETTLEMENT_CAPACITY } from './onceflow-strategy.js';
import { redactUrl } from './redact-url.js';
import type { SharedLedgerHandle } from './shared-ledger.js';

// Connections per process. A worker keeps 64 players' applies in flight (store-worker.ts LANES);
// each apply is one statement of well under a millisecond, so 8 connections keep a local server
// busy while 4 workers (32 connections, with the coordinator's) stay far below the server's
// default max_connections of 100.
const POOL_SIZE = 8;
// How long connecting may take before the run fails, naming the URL: a TCP connect and the
// startup exchange are ~2 round trips, milliseconds in a region; 3 s is the Redis row's bound too.
const CONNECT_TIMEOUT_MS = 3000;

/**
 * Opens the demo's settlement ledger on PostgreSQL, in the run's own schema (`cleanup` drops it
 * with everything in it). `pg` is an optional peer dependency of onceflow, so it is loaded only
 * here, when `--postgres` is used, with a clear message if missing. An unreachable server is a
 * {@link DemoFailure} naming the URL (its password replaced by `***`).
 */
export async function openPostgresLedger(url: string, schema: string): Promise<SharedLedgerHandle> {
  let Pool: typeof import('pg').Pool;
  try {
    ({ Pool } = (await import('pg')).default);
  } catch (cause) {
    throw new DemoFailure('`--postgres` needs the pg package: npm install pg', { cause });
  }
  const { createPostgresStore, migrate } = await import('../postgres/index.js');
  const pool = new Pool({
    connectionString: url,
    max: POOL_SIZE,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // An idle client whose server went away reports it here; the operation in flight rejects itself.
  pool.on('error', () => {});
  // The journal is not read by the demo (it reads per-room totals): keep none, bounded storage.
  // Made before the schema is: a store that refuses its options leaves nothing behind.
  const store = createPostgresStore({ pool, schema, migrate: false, journal: { maxEntriesPerOwner: 0 } });
  try {
    // Every process of the run migrates (the advisory lock makes them take turns): the first
    // creates the schema, the others find it current.
    await migrate({ pool, schema });
  } catch (err) {
    await pool.end().catch(() => {});
    const cause = (err as { cause?: unknown }).cause ?? err;
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new DemoFailure(redactUrl(`cannot use PostgreSQL at ${url}: ${reason}`), { cause: err });
  }
  return {
    ledger: createLedger({ store, capacity: SETTLEMENT_CAPACITY }),
    async close() {
      await pool.end();
    },
    async cleanup() {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      return 1;
    },
  };
}
