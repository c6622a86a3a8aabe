// limiter.reset(key) on Redis and the 3-master cluster gives the memory store's answers: one
// key's state goes (every limit), others stay, and takes called before the reset count first.
import { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createLimiter, FakeClock, type Limiter, memoryStore, type Store } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

async function scenario(store: Store): Promise<unknown[]> {
  const clock = new FakeClock(1_000_000);
  const limiter: Limiter = createLimiter({
    store,
    clock,
    limits: [
      { id: 'log', algorithm: 'sliding-log', limit: 4, window: '1s' },
      { id: 'gcra', algorithm: 'gcra', limit: 6, window: '1m' },
    ],
  });
  const out: unknown[] = [];
  const seen = async (key: string, cost = 1) => {
    const d = await limiter.take(key, { cost });
    out.push([key, d.allowed, d.limits.map((l) => l.remaining)]);
  };
  await seen('a', 3);
  await seen('b', 2);
  await limiter.reset('a');
  await seen('a');
  await seen('b');
  // A take called before the reset, not awaited: it counts first, then the reset removes it.
  const before = limiter.take('a', { cost: 2 });
  await limiter.reset('a');
  out.push((await before).allowed);
  await seen('a');
  // And one called after: the reset does not remove it.
  await limiter.reset('b');
  await seen('b', 4);
  await seen('b');
  return out;
}

describe('limiter.reset(key)', () => {
  const targets: { name: string; client: Redis | Cluster }[] = [
    { name: 'standalone', client: new Redis(REDIS_URL) },
    { name: 'cluster', client: clusterClient() },
  ];
  const prefix = runPrefix('limiter-reset');
  afterAll(async () => {
    for (const { client } of targets) {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    }
  });

  it('the memory store answers as expected', async () => {
    expect(await scenario(memoryStore())).toEqual([
      ['a', true, [1, 3]],
      ['b', true, [2, 4]],
      ['a', true, [3, 5]],
      ['b', true, [1, 3]],
      true,
      ['a', true, [3, 5]],
      ['b', true, [0, 2]],
      ['b', false, [0, 2]],
    ]);
  });

  for (const target of targets) {
    it(`${target.name}: the same answers as the memory store, and the key is gone from Redis`, async () => {
      const memory = await scenario(memoryStore());
      const store = createRedisStore({ client: target.client, prefix: `${prefix}${target.name}:` });
      expect(await scenario(store)).toEqual(memory);
      const limiter = createLimiter({
        store,
        name: 'gone',
        algorithm: 'fixed-window',
        limit: 2,
        window: '1m',
      });
      await limiter.take('k');
      const nodes = target.client instanceof Cluster ? target.client.nodes('master') : [target.client];
      const count = async () => {
        let n = 0;
        for (const node of nodes) n += (await node.keys(`${prefix}${target.name}:{|l:gone:k}*`)).length;
        return n;
      };
      expect(await count()).toBe(1);
      await limiter.reset('k');
      expect(await count()).toBe(0);
    });
  }
});
