// The limiter's state operations and blocks on Redis, standalone and cluster (see
// test/support/limiter-adjust-checks.ts).
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import { limiterAdjustChecks } from '../support/limiter-adjust-checks.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

for (const mode of ['standalone', 'cluster'] as const) {
  const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
  const prefix = runPrefix(`adjust-${mode}`);
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });
  limiterAdjustChecks({ label: `Redis (${mode})`, store: () => createRedisStore({ client, prefix }) });
}
