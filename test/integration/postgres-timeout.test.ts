// Every call of the Postgres store waits a bounded time by default (the `timeout` option): a
// `pg` Pool's own connectionTimeoutMillis defaults to 0, waiting forever for a client, and `pg`
// has no bound on a statement's answer. Servers here are the test's own: a socket that accepts
// and never answers, and a proxy in front of the run's PostgreSQL that stops passing replies.
import { createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { createPostgresStore, migrate, withTransaction } from '../../src/postgres/index.js';
import { startTcpProxy, type TcpProxy } from '../../src/testing/tcp-proxy.js';
import { dropSchema, PG_URL, runSchema, testPool } from './pg-env.js';

/** A TCP server that accepts every connection and never sends a byte. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    async close() {
      for (const s of sockets) s.destroy(); // what was connecting fails now, so pools can end
      await new Promise((r) => server.close(r));
    },
  };
}

const urlOn = (port: number) => {
  const url = new URL(PG_URL);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString();
};

const entry = { owner: 'p1', signature: 's1', deltas: { coins: 1 }, order: 1 };

describe('Postgres store calls end within their timeout', () => {
  let silent: Awaited<ReturnType<typeof silentServer>>;
  let silentPool: pg.Pool;
  beforeAll(async () => {
    silent = await silentServer();
    // As `new pg.Pool(...)` comes by default: connectionTimeoutMillis 0, no bound of its own.
    silentPool = new pg.Pool({ connectionString: urlOn(silent.port) });
    silentPool.on('error', () => {});
  });
  afterAll(async () => {
    await silent.close();
    await silentPool.end();
  });

  it('a server that never answers: ERR_STORE within the default 10 s, not-applied, retriable', async () => {
    const ledger = createLedger({
      store: createPostgresStore({ pool: silentPool, migrate: false }),
      capacity: 4,
    });
    const err = await ledger.apply(entry).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied', retriable: true });
    expect((err as Error).message).toMatch(/no client from the pool within 10000 ms/);
  }, 60_000);

  it('the timeout is the caller’s: the first operation’s migration, migrate and withTransaction too', async () => {
    const store = createPostgresStore({ pool: silentPool, timeout: '200ms' });
    const err = await createLedger({ store, capacity: 4 })
      .apply(entry)
      .catch((e: unknown) => e);
    // The migration and the operation both end at the caller's 200 ms: whichever timer a loaded
    // machine fires first names the error (the migration's, or the apply's wait for it).
    expect(err).toMatchObject({ code: 'ERR_STORE', retriable: true });
    expect(['migrate', 'ledgerApply']).toContain((err as { operation?: unknown }).operation);
    expect(await migrate({ pool: silentPool, timeout: 200 }).catch((e: unknown) => e)).toMatchObject({
      code: 'ERR_STORE',
      operation: 'migrate',
      outcome: 'not-applied',
      retriable: true,
    });
    let ran = false;
    const tx = await withTransaction(
      silentPool,
      async () => {
        ran = true;
      },
      { timeout: '200ms' },
    ).catch((e: unknown) => e);
    expect(tx).toMatchObject({ code: 'ERR_STORE', operation: 'transaction', outcome: 'not-applied' });
    expect(ran).toBe(false);
  });
});

describe('Postgres store calls on a live server that stops answering', () => {
  const schema = runSchema('timeout');
  const admin = testPool(2);
  let proxy: TcpProxy;
  let pool: pg.Pool;
  const pools: pg.Pool[] = [];
  beforeAll(async () => {
    await migrate({ pool: admin, schema });
    proxy = await startTcpProxy(Number(new URL(PG_URL).port || 5432));
    pool = new pg.Pool({ connectionString: urlOn(proxy.port), max: 1 });
    pool.on('error', () => {});
  });
  afterAll(async () => {
    await proxy.close();
    for (const p of [pool, ...pools]) await p.end();
    await dropSchema(admin, schema);
    await admin.end();
  });

  it('a pool with no free client: not-applied once the timeout passes, then it works again', async () => {
    // The schema is migrated (beforeAll): the store's first operation is its own.
    const store = createPostgresStore({ pool, schema, timeout: '300ms', migrate: false });
    const ledger = createLedger({ store, capacity: 4 });
    const held = await pool.connect(); // the pool's only client, held elsewhere
    held.on('error', () => {});
    try {
      const err = await ledger.apply(entry).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ERR_STORE', operation: 'ledgerApply', outcome: 'not-applied' });
      expect((err as Error).message).toMatch(/no client from the pool within 300 ms/);
    } finally {
      held.release();
    }
    expect((await ledger.apply(entry)).outcome).toBe('applied');
  });

  it('no answer to a statement: a write is unknown, a read not-applied; the client is destroyed', async () => {
    // A pool of its own: a connect begun while the proxy delays keeps its slot until the proxy closes.
    const pool = new pg.Pool({ connectionString: urlOn(proxy.port), max: 4 });
    pool.on('error', () => {});
    pools.push(pool);
    const store = createPostgresStore({ pool, schema, timeout: '500ms', migrate: false });
    const ledger = createLedger({ store, capacity: 4 });
    expect(await ledger.balances('p1')).toEqual({ coins: 1n }); // a client is connected
    proxy.latency(600_000); // every byte from now on waits ten minutes in the proxy
    const write = await ledger.apply({ ...entry, signature: 's2', order: 2 }).catch((e: unknown) => e);
    expect(write).toMatchObject({ code: 'ERR_STORE', outcome: 'unknown', retriable: true });
    expect((write as Error).message).toMatch(/no answer from PostgreSQL within \d+ ms/);
    const read = await ledger.balances('p1').catch((e: unknown) => e);
    expect(read).toMatchObject({ code: 'ERR_STORE', outcome: 'not-applied', retriable: true });
    proxy.latency(0);
    // The clients that waited were destroyed: a new one answers at once (the delayed bytes of the
    // old ones never reach the server: their connections are closed).
    expect(await ledger.balances('p1')).toEqual({ coins: 1n });
    expect((await ledger.apply({ ...entry, signature: 's2', order: 2 })).outcome).toBe('applied');
  });
});
