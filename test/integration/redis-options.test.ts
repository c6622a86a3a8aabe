import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { isOnceflowError } from '../../src/core/errors.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

describe('createRedisStore options', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('options');
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  it('refuses a prefix with a brace or a lone surrogate (two such prefixes would share keys)', () => {
    for (const bad of [`${prefix}a{b:`, `${prefix}tag\ud800:`, `${prefix}\udc00`, 5]) {
      let caught: unknown;
      try {
        createRedisStore({ client, prefix: bad as string });
      } catch (err) {
        caught = err;
      }
      expect(isOnceflowError(caught, 'ERR_INVALID_OPTION')).toBe(true);
      expect((caught as { option: string }).option).toBe('prefix');
    }
  });

  it('keeps the newest maxEntriesPerOwner journal entries of each owner, dedup and totals exact', async () => {
    const store = createRedisStore({ client, prefix: `${prefix}ret:`, journal: { maxEntriesPerOwner: 2 } });
    const ledger = createLedger({ store, capacity: 2 });
    for (const owner of ['a', 'b'])
      for (const signature of ['x', 'y', 'z'])
        await ledger.apply({ owner, signature, deltas: { coins: 1 }, scope: 'r' });
    // A repeat still in the window: answered from the window, whatever the journal kept.
    expect((await ledger.apply({ owner: 'a', signature: 'z', deltas: { coins: 1 } })).outcome).toBe(
      'duplicate',
    );
    const journal = await ledger.journal();
    expect(journal.map((e) => `${e.owner}${e.signature}${e.seq}`).sort()).toEqual([
      'ay2',
      'az3',
      'by2',
      'bz3',
    ]);
    expect((await ledger.journal({ owner: 'a' })).map((e) => e.signature)).toEqual(['y', 'z']);
    expect(await ledger.totals('r')).toEqual({ coins: 6n });
    expect(await ledger.balances('a')).toEqual({ coins: 3n });
    const streams = await client.keys(`${prefix}ret:*:j`);
    expect(streams).toHaveLength(2);
    for (const key of streams) expect(await client.xlen(key)).toBe(2);
  });

  it('maxEntriesPerOwner: Infinity keeps every entry, as leaving it out does', async () => {
    const ledger = createLedger({
      store: createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: Number.POSITIVE_INFINITY } }),
      capacity: 4,
      name: 'infinite-journal',
    });
    for (let i = 0; i < 5; i++) await ledger.apply({ owner: 'p', signature: `s${i}`, deltas: { coins: 1 } });
    expect(await ledger.journal({ owner: 'p' })).toHaveLength(5);
  });

  it('refuses the other store retention option by name: the same number would keep other entries', () => {
    const caught = (make: () => unknown) => {
      try {
        make();
      } catch (err) {
        return err;
      }
      return undefined;
    };
    const onRedis = caught(() =>
      createRedisStore({ client, prefix, journal: { maxEntries: 10 } as { maxEntriesPerOwner?: number } }),
    );
    expect(isOnceflowError(onRedis, 'ERR_INVALID_OPTION')).toBe(true);
    expect(String(onRedis)).toMatch(/`journal.maxEntries`.*per owner, `journal.maxEntriesPerOwner`/);
    const inMemory = caught(() =>
      memoryStore({ journal: { maxEntriesPerOwner: 10 } as { maxEntries?: number } }),
    );
    expect(isOnceflowError(inMemory, 'ERR_INVALID_OPTION')).toBe(true);
    expect(String(inMemory)).toMatch(/`journal.maxEntriesPerOwner`.*the whole ledger, `journal.maxEntries`/);
    for (const bad of [-1, 1.5, '3']) {
      expect(
        isOnceflowError(
          caught(() => createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: bad as number } })),
          'ERR_INVALID_OPTION',
        ),
      ).toBe(true);
    }
  });

  it('refuses an unknown option key, at the top and in journal, with a did-you-mean', () => {
    const caught = (options: unknown) => {
      try {
        createRedisStore(options as Parameters<typeof createRedisStore>[0]);
      } catch (err) {
        return err as { code?: string; option?: string; message: string };
      }
      return undefined;
    };
    const top = caught({ client, prefx: `${prefix}x:` });
    expect(top).toMatchObject({ code: 'ERR_INVALID_OPTION', option: 'prefx' });
    expect(top?.message).toMatch(/did you mean `prefix`/);
    expect(caught({ client, timout: '1s' })?.message).toMatch(/`timout`.*did you mean `timeout`/);
    const nested = caught({ client, journal: { maxEntriesPerOwnr: 3 } });
    expect(nested).toMatchObject({ code: 'ERR_INVALID_OPTION', option: 'journal.maxEntriesPerOwnr' });
    expect(nested?.message).toMatch(/did you mean `maxEntriesPerOwner`/);
    expect(caught({ client, journal: { maxEntriesPerOwner: 3, horizon: true } })).toMatchObject({
      option: 'journal.horizon',
    });
  });

  it('timeout: a positive duration a timer can wait out, refused by name otherwise', () => {
    for (const bad of [0, -1, '0ms', 'soon', 2 ** 31, '30d', Number.NaN, null]) {
      let caught: unknown;
      try {
        createRedisStore({ client, prefix, timeout: bad as never });
      } catch (err) {
        caught = err;
      }
      expect(caught, String(bad)).toBeDefined();
      expect(String((caught as Error).message), String(bad)).toMatch(/`timeout`/);
    }
    for (const good of [1, '250ms', '10s', 2 ** 31 - 1])
      createRedisStore({ client, prefix, timeout: good as never });
  });

  it('two stores with different prefixes on one client keep separate ledgers', async () => {
    const a = createLedger({ store: createRedisStore({ client, prefix: `${prefix}a:` }), capacity: 4 });
    const b = createLedger({ store: createRedisStore({ client, prefix: `${prefix}b:` }), capacity: 4 });
    const entry = { owner: 'o', signature: 's', deltas: { coins: 1 } };
    expect((await a.apply(entry)).outcome).toBe('applied');
    expect((await b.apply(entry)).outcome).toBe('applied');
  });
});

describe('a direct store caller that repeats a delta field', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('dup-fields');
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  it('is refused by the memory and the Redis store alike, with nothing applied', async () => {
    for (const store of [memoryStore(), createRedisStore({ client, prefix })]) {
      const command = {
        ledger: 'd',
        capacity: 4,
        horizon: true,
        owner: 'o',
        signature: 'x',
        deltas: [
          ['c', 5n],
          ['c', 7n],
        ] as [string, bigint][],
        scope: 'S',
      };
      await expect(store.ledgerApply(command)).rejects.toSatisfy((e) =>
        isOnceflowError(e, 'ERR_INVALID_ARGUMENT'),
      );
      expect(await store.ledgerBalances('d', 'o')).toEqual({});
      expect(await store.ledgerScopeTotals('d', 'S')).toEqual({});
    }
  });
});

describe('Redis losing its data under a running process', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('data-loss');
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  it('the owners are registered again, so totals and journals find what is booked after', async () => {
    const ledger = createLedger({ store: createRedisStore({ client, prefix }), capacity: 4 });
    await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 }, scope: 'A' });
    // What a restart without persistence does to this run's keys (the shared server is not flushed).
    await cleanupPrefix(client, prefix);
    await ledger.apply({ owner: 'p1', signature: 's2', deltas: { coins: 7 }, scope: 'A' });
    expect(await ledger.balances('p1')).toEqual({ coins: 7n });
    expect(await ledger.totals('A')).toEqual({ coins: 7n });
    expect((await ledger.journal({ scope: 'A' })).map((e) => e.signature)).toEqual(['s2']);
    expect((await ledger.journal({})).map((e) => e.signature)).toEqual(['s2']);
  });
});
