// The store the onceflow rows run on, from `--store URL`: the memory store (the default), Redis or
// PostgreSQL, opened through the package's public entries only (removing a run's Redis keys is the
// internal unlinkPrefix, shared with the benchmarks). Each client package is an optional peer
// dependency, loaded only when its URL is given.
import { memoryStore, type Store } from '../../index.js';
import { unlinkPrefix } from '../../redis/unlink-prefix.js';
import { DemoFailure } from '../failure.js';
import { redactUrl } from '../redact-url.js';

/** A store of the run's own, and how to let go of it. */
export interface DemoStore {
  /** `memory`, `Redis` or `PostgreSQL`, for the report. */
  readonly label: string;
  readonly store: Store;
  /** Removes what the run wrote (its own key prefix or schema, never anything else). */
  cleanup(): Promise<void>;
  /** Closes the connection(s). */
  close(): Promise<void>;
}

// How long connecting may take before the run fails naming the URL: a TCP connect, a TLS
// handshake and a start-up exchange are a few round trips, milliseconds within a region and about
// a second across continents; 3 s is 3x that (ioredis's own default is 10 s).
const CONNECT_TIMEOUT_MS = 3000;
// Connections to PostgreSQL: the rows keep 64 applies in flight (onceflow.ts LANES), each one
// statement of well under a millisecond, so 8 keep a local server busy, far below its default
// max_connections of 100.
const POOL_SIZE = 8;

/**
 * A namespace of the run's own, from its time and pid: the Redis key prefix
 * `onceflow-demo:<time>:<pid>:` (what docs/operations.md tells users to SCAN for after a killed
 * run) or the PostgreSQL schema `onceflow_demo_<time>_<pid>`.
 */
export function runNamespace(kind: 'redis' | 'postgres'): string {
  const time = Date.now().toString(36);
  return kind === 'redis' ? `onceflow-demo:${time}:${process.pid}:` : `onceflow_demo_${time}_${process.pid}`;
}

/** Opens the store `url` names (`undefined`: the memory store). The journal is off: the demo reads totals. */
export async function openStore(url: string | undefined): Promise<DemoStore> {
  if (url === undefined || url === 'memory:') {
    const store = memoryStore({ journal: { maxEntries: 0 } });
    return { label: 'memory', store, cleanup: async () => {}, close: async () => {} };
  }
  return url.startsWith('redis') ? openRedis(url) : openPostgres(url);
}

async function openRedis(url: string): Promise<DemoStore> {
  let Redis: typeof import('ioredis').Redis;
  try {
    ({ Redis } = await import('ioredis'));
  } catch (cause) {
    throw new DemoFailure('`--store redis://...` needs the ioredis package: npm install ioredis', { cause });
  }
  const { createRedisStore } = await import('../../redis/index.js');
  const client = new Redis(url, {
    maxRetriesPerRequest: 3,
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
  });
  // ioredis reports connection trouble as 'error' events (printed as unhandled without a listener);
  // the last one names the cause when connecting fails.
  let lastError: Error | undefined;
  client.on('error', (err: Error) => {
    lastError = err;
  });
  try {
    await client.connect();
  } catch (err) {
    client.disconnect();
    const cause = lastError ?? err;
    throw new DemoFailure(redactUrl(`cannot connect to Redis at ${url}: ${(cause as Error).message}`), {
      cause,
    });
  }
  // A failed SELECT of the URL's database is an 'error' event on a client that still connected, to
  // database 0: the run would write where it was not asked to.
  if (lastError !== undefined) {
    client.disconnect();
    throw new DemoFailure(redactUrl(`cannot use Redis at ${url}: ${lastError.message}`), {
      cause: lastError,
    });
  }
  const prefix = runNamespace('redis');
  return {
    label: 'Redis',
    store: createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: 0 } }),
    cleanup: () => unlinkPrefix(client, prefix),
    async close() {
      await client.quit();
    },
  };
}

async function openPostgres(url: string): Promise<DemoStore> {
  let Pool: typeof import('pg').Pool;
  try {
    ({ Pool } = (await import('pg')).default);
  } catch (cause) {
    throw new DemoFailure('`--store postgres://...` needs the pg package: npm install pg', { cause });
  }
  const { createPostgresStore, migrate } = await import('../../postgres/index.js');
  const pool = new Pool({
    connectionString: url,
    max: POOL_SIZE,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // An idle client whose server went away reports it here; the operation in flight rejects itself.
  pool.on('error', () => {});
  const schema = runNamespace('postgres');
  const store = createPostgresStore({ pool, schema, migrate: false, journal: { maxEntriesPerOwner: 0 } });
  try {
    await migrate({ pool, schema });
  } catch (err) {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await pool.end().catch(() => {});
    const cause = (err as { cause?: unknown }).cause ?? err;
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new DemoFailure(redactUrl(`cannot use PostgreSQL at ${url}: ${reason}`), { cause: err });
  }
  return {
    label: 'PostgreSQL',
    store,
    async cleanup() {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
    async close() {
      await pool.end();
    },
  };
}
