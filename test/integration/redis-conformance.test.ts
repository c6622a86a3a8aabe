import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import { conformance } from '../../src/testing/index.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

for (const mode of ['standalone', 'cluster'] as const) {
  describe(`conformance: Redis store (${mode})`, () => {
    const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
    const prefix = runPrefix('conf');
    const store = createRedisStore({ client, prefix });
    afterAll(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });

    for (const c of conformance.cases) {
      it(`${c.name}: ${c.rule}`, async () => {
        const { failures } = await conformance.runCase(store, c, { prefix: 'c:' });
        expect(failures).toEqual([]);
      });
    }
  });
}
