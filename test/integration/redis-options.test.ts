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
