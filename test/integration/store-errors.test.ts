// What an ERR_STORE tells the caller: whether the call may have taken effect (`outcome`) and
// whether trying again may succeed (`retriable`), on every path a store fails by.
import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedger, type LedgerEntry, memoryStore, type StoreError } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { ownerKeys } from '../../src/redis/keys.js';
import { freePort, startRedis } from '../support/redis-servers.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { rejected } from '../support/thrown.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const entry: LedgerEntry = { owner: 'p1', signature: 'round-1', deltas: { coins: 5 } };

async function storeError(promise: Promise<unknown>): Promise<StoreError> {
  const err = (await rejected(promise)) as StoreError;
  expect(err.code).toBe('ERR_STORE');
  expect(err.operation).toBeTypeOf('string');
  return err;
}

describe('Redis: a reply lost after the script ran', () => {
  it("is outcome 'unknown', retriable; the apply happened, and the same entry sent again is a duplicate", async () => {
    const server = await startRedis();
    const proxy = await startTcpProxy(server.port);
    // No reconnect: what was in flight when the connection dropped fails (with a reconnect,
    // ioredis sends it again and the script answers it as it ran: redis-lost-replies.test.ts).
    const client = new Redis({ host: '127.0.0.1', port: proxy.port, retryStrategy: () => null });
    client.on('error', () => {});
    const direct = new Redis(server.port, '127.0.0.1');
    try {
      const ledger = createLedger({ store: createRedisStore({ client, prefix: 'e:' }), capacity: 4 });
      await client.ping();
      proxy.loseNextReply();
      const err = await storeError(ledger.apply(entry));
      expect(proxy.killed).toBe(1);
      expect(err).toMatchObject({ operation: 'ledgerApply', outcome: 'unknown', retriable: true });
      // It was applied (read through another connection): in the window, and booked.
      const again = createLedger({ store: createRedisStore({ client: direct, prefix: 'e:' }), capacity: 4 });
      expect((await again.window('p1')).signatures).toEqual(['round-1']);
      expect(await again.balances('p1')).toEqual({ coins: 5n });
      // The retry the error allows, from a fresh process's store: answered, not booked again.
      expect(await again.apply(entry)).toMatchObject({ outcome: 'duplicate', balances: { coins: 5n } });
    } finally {
      client.disconnect();
      direct.disconnect();
      await proxy.close();
      await server.stop();
      rmSync(server.dir, { recursive: true, force: true });
    }
  });

  it("a command that timed out is 'unknown' too: it ran once the server could", async () => {
    const server = await startRedis(['--enable-debug-command', 'yes']);
    const client = new Redis({ host: '127.0.0.1', port: server.port, commandTimeout: 100 });
    const blocker = new Redis(server.port, '127.0.0.1');
    try {
      const ledger = createLedger({ store: createRedisStore({ client, prefix: 'e:' }), capacity: 4 });
      await ledger.apply({ ...entry, signature: 'warm-up' }); // registered: the next apply is the script alone
      const sleeping = blocker.call('DEBUG', 'SLEEP', '0.5');
      await new Promise((r) => setTimeout(r, 50));
      const err = await storeError(ledger.apply(entry));
      expect(err).toMatchObject({ outcome: 'unknown', retriable: true });
      await sleeping;
      expect((await ledger.window('p1')).signatures).toContain('round-1');
      expect((await ledger.apply(entry)).outcome).toBe('duplicate');
    } finally {
      client.disconnect();
      blocker.disconnect();
      await server.stop();
      rmSync(server.dir, { recursive: true, force: true });
    }
  });
});

describe('Redis: a command refused before it was sent', () => {
  it("a closed client: 'not-applied', not retriable (on applies and reads)", async () => {
    const client = new Redis(REDIS_URL);
    const ledger = createLedger({
      store: createRedisStore({ client, prefix: runPrefix('closed') }),
      capacity: 4,
    });
    await client.quit();
    expect(await storeError(ledger.apply(entry))).toMatchObject({ outcome: 'not-applied', retriable: false });
    expect(await storeError(ledger.balances('p1'))).toMatchObject({
      outcome: 'not-applied',
      retriable: false,
    });
  });

  it("a client never connected, with its offline queue off: 'not-applied', retriable", async () => {
    const port = await freePort(); // nothing listens there
    const client = new Redis({
      host: '127.0.0.1',
      port,
      enableOfflineQueue: false,
      lazyConnect: true,
      retryStrategy: () => null,
    });
    client.on('error', () => {});
    try {
      const ledger = createLedger({ store: createRedisStore({ client, prefix: 'never:' }), capacity: 4 });
      expect(await storeError(ledger.apply(entry))).toMatchObject({
        outcome: 'not-applied',
        retriable: true,
      });
    } finally {
      client.disconnect();
    }
  });
});

describe('Redis: the server answered with an error', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('store-errors');
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  it("WRONGTYPE on the owner's window key: not retriable, outcome 'unknown' (a script's writes are not rolled back)", async () => {
    const p = `${prefix}a:`;
    const ledger = createLedger({ store: createRedisStore({ client, prefix: p }), capacity: 4 });
    await client.set(ownerKeys(p, 'default', 'p1')[0], 'not a hash');
    const err = await storeError(ledger.apply(entry));
    expect(err).toMatchObject({ operation: 'ledgerApply', outcome: 'unknown', retriable: false });
    expect((err.cause as Error).message).toMatch(/WRONGTYPE/);
  });

  it("in a batch, entries before the failing one were applied: every caller's error is 'unknown'", async () => {
    const p = `${prefix}b:`;
    const ledger = createLedger({ store: createRedisStore({ client, prefix: p }), capacity: 4 });
    await ledger.apply({ owner: 'ok', signature: 'warm-up', deltas: {} }); // registered, as is 'bad' below
    await ledger.apply({ owner: 'bad', signature: 'warm-up', deltas: {} });
    await client.del(ownerKeys(p, 'default', 'bad')[0]);
    await client.set(ownerKeys(p, 'default', 'bad')[0], 'not a hash');
    // Called in one turn: one batch, one script, 'ok' first.
    const [first, second] = await Promise.allSettled([
      ledger.apply({ owner: 'ok', signature: 's', deltas: { coins: 1 } }),
      ledger.apply({ owner: 'bad', signature: 's', deltas: { coins: 1 } }),
    ]);
    for (const settled of [first, second]) {
      expect(settled.status).toBe('rejected');
      expect((settled as PromiseRejectedResult).reason).toMatchObject({
        outcome: 'unknown',
        retriable: false,
      });
    }
    // ... and 'ok' was applied indeed: its retry is a duplicate.
    expect(await ledger.balances('ok')).toEqual({ coins: 1n });
    expect((await ledger.apply({ owner: 'ok', signature: 's', deltas: { coins: 1 } })).outcome).toBe(
      'duplicate',
    );
  });

  it("WRONGTYPE on the owner registry (written before the script): 'not-applied', not retriable", async () => {
    const p = `${prefix}c:`;
    const ledger = createLedger({ store: createRedisStore({ client, prefix: p }), capacity: 4 });
    await client.set(`${p}{default}:owners`, 'not a set');
    const err = await storeError(ledger.apply(entry));
    expect(err).toMatchObject({ outcome: 'not-applied', retriable: false });
    expect(await client.exists(ownerKeys(p, 'default', 'p1')[0])).toBe(0);
  });
});

describe('memory store', () => {
  it("a broken clock: 'not-applied', not retriable, and nothing changed", async () => {
    let now = 1000;
    const ledger = createLedger({ store: memoryStore({ clock: { now: () => now } }), capacity: 4 });
    now = Number.NaN;
    const err = await storeError(ledger.apply(entry));
    expect(err).toMatchObject({ operation: 'ledgerApply', outcome: 'not-applied', retriable: false });
    expect(await ledger.balances('p1')).toEqual({});
  });
});
