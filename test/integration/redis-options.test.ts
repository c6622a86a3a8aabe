import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { isOnceflowError } from '../../src/core/errors.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/index.js';
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
