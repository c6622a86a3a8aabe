import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

describe('journal meta: the memory and Redis stores give back the same value', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('meta');
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  it('for odd but valid JSON, proxies, getters, -0 and arrays with extra properties', async () => {
    // Each ledger gets its own copy of every value (a getter must be read once per apply).
    const metas: (() => unknown)[] = [
      () => ({ n: -0, big: 1e21, small: 5e-324, neg: -1.5 }),
      () => ({ s: 'line\u2028sep', emoji: '😀', nul: '\u0000', quote: '"\\' }),
      () => JSON.parse('{"__proto__": {"x": 1}, "constructor": 2}'),
      () => new Proxy({ k: [1, { j: null }] }, {}),
      () => {
        let reads = 0;
        return {
          get v() {
            reads++;
            return reads === 1 ? 'first' : 'later';
          },
        };
      },
      () => ({ a: Object.assign([1, 2], { extra: 'x' }) }),
      () => [[], {}, '', 0, false, null],
      () => 'plain string',
      () => 0,
    ];
    const memory = createLedger({ store: memoryStore(), capacity: 64 });
    const redis = createLedger({ store: createRedisStore({ client, prefix }), capacity: 64 });
    for (const [i, meta] of metas.entries()) {
      for (const ledger of [memory, redis]) {
        await ledger.apply({ owner: 'p', signature: `s${i}`, deltas: { coins: 1 }, meta: meta() as never });
      }
    }
    const fromMemory = (await memory.journal({ owner: 'p' })).map((e) => e.meta);
    const fromRedis = (await redis.journal({ owner: 'p' })).map((e) => e.meta);
    expect(fromRedis).toHaveLength(metas.length);
    expect(fromMemory).toStrictEqual(fromRedis);
    expect(Object.is((fromMemory[0] as { n: number }).n, 0)).toBe(true);
    expect(fromMemory[4]).toStrictEqual({ v: 'first' });
  });
});
