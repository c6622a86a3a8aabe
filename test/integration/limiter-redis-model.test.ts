// The limiter model suite (test/support/model-suites/limiter.ts) on Redis, standalone and the
// 3-master cluster, in client-clock mode; and what only Redis has: key expiry.
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { createLimiter, FakeClock } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { limiterModelSuite } from '../support/model-suites/limiter.js';
import { limiterAdjustModelSuite } from '../support/model-suites/limiter-adjust.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

for (const mode of ['standalone', 'cluster'] as const) {
  const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
  const prefix = runPrefix(`limiter-model-${mode}`);
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });
  const store = () => createRedisStore({ client, prefix });

  limiterAdjustModelSuite({ label: `Redis (${mode})`, store, runScale: mode === 'cluster' ? 0.5 : 1 });
  limiterModelSuite({ label: `Redis (${mode})`, store }, () => {
    it('a key written on a caller clock outlives its window by the client slack (a fake clock may stand still)', async () => {
      const name = `ttl-${mode}`;
      const clock = new FakeClock(1_000_000);
      const limit = { algorithm: 'gcra', limit: 1, window: '1s', blockCache: false } as const;
      const onClient = createLimiter({ store: store(), clock, name, ...limit });
      const onServer = createLimiter({ store: store(), name: `${name}-s`, ...limit });
      await onClient.take('k');
      await onServer.take('k');
      const ttls: Record<string, number> = {};
      // Every master's keys (a cluster client's KEYS asks one node only).
      const nodes = client instanceof Redis ? [client] : client.nodes('master');
      for (const node of nodes) {
        for (const key of await node.keys(`${prefix}*${name}*`)) {
          ttls[key.includes(`${name}-s`) ? 'server' : 'client'] = await client.pttl(key);
        }
      }
      expect(ttls.client).toBeGreaterThan(600_000);
      expect(ttls.server).toBeLessThanOrEqual(2_000);
    });
  });
}
