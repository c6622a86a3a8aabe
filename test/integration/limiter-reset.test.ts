// limiter.reset(key) on Redis and the 3-master cluster gives the memory store's answers: one
// key's state goes (every limit), others stay, and takes called before the reset count first.
import { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createLimiter,
  createTenantRegistry,
  FakeClock,
  type Limiter,
  memoryStore,
  type Store,
} from '../../src/index.js';
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

/** Calls made in one turn, not awaited: each store must answer as if they ran in call order. */
async function races(store: Store): Promise<unknown> {
  const plain = createLimiter({
    store,
    name: 'race',
    algorithm: 'fixed-window',
    limit: 1,
    window: '1m',
    blockCache: false,
  });
  const before = plain.take('k');
  const reset = plain.reset('k');
  const after = plain.take('k'); // counted on the fresh state: the reset must not erase it
  const [b, , a] = await Promise.all([before, reset, after]);
  const next = await plain.take('k');

  const cached = createLimiter({ store, name: 'cached', algorithm: 'fixed-window', limit: 1, window: '1m' });
  await cached.take('k');
  await cached.take('k'); // refused: a block is cached
  const resetCached = cached.reset('k');
  const afterCached = cached.take('k'); // not refused from the block the reset forgets
  const [, c] = await Promise.all([resetCached, afterCached]);

  const tenants = createTenantRegistry({ store });
  tenants.init('acme', { algorithm: 'fixed-window', limit: 1, window: '1m', blockCache: false });
  const queued = tenants.take('acme', 'k'); // called before the tenant reset: it counts, then goes
  const removed = tenants.reset('acme');
  await Promise.all([queued, removed]);
  const fresh = await tenants.take('acme', 'k');
  return [b.allowed, a.allowed, next.allowed, c.reason, await removed, fresh.allowed];
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

  it('calls not awaited: a reset comes between the takes called before and after it (memory)', async () => {
    expect(await races(memoryStore())).toEqual([true, true, false, 'allowed', 1, true]);
  });

  for (const target of targets) {
    it(`${target.name}: takes and resets not awaited answer as in the memory store`, async () => {
      const store = createRedisStore({ client: target.client, prefix: `${prefix}${target.name}-races:` });
      expect(await races(store)).toEqual(await races(memoryStore()));
    });

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
