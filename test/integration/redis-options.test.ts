import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { isOnceflowError } from '../../src/core/errors.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory-store.js';
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
