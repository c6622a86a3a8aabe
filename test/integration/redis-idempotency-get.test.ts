// idempotencyGet (the read behind `idempotency.seen` and its Bloom pre-check) on the real Redis,
// standalone and Cluster (a script on the record's own slot): the cases of
// test/support/idempotency-get-cases.ts, as on the memory store (and postgres-idempotency-get.test.ts).
import { Redis } from 'ioredis';
import { afterAll, describe } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import { idempotencyGetCases } from '../support/idempotency-get-cases.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

for (const mode of ['standalone', 'cluster'] as const) {
  describe(`idempotencyGet on Redis (${mode})`, () => {
    const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
    const prefix = runPrefix(`idem-get-${mode}`);
    const store = createRedisStore({ client, prefix });
    afterAll(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });
    idempotencyGetCases(
      () => store,
      (n) => n,
    );
  });
}
