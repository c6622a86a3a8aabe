// Local-first limits on Redis (standalone and cluster), with a fake clock passed in
// (see test/support/local-first-checks.ts; PostgreSQL: postgres-local-first.test.ts; across OS
// processes: local-first-workers.test.ts).
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import { localFirstChecks } from '../support/local-first-checks.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

for (const mode of ['standalone', 'cluster'] as const) {
  const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
  const prefix = runPrefix(`local-first-${mode}`);
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });
  localFirstChecks({ label: `Redis (${mode})`, store: () => createRedisStore({ client, prefix }) });
}
