// The cyclic-result suite (test/support/model-suites/idempotency-cyclic.ts) on Redis.
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import { cyclicResultSuite } from '../support/model-suites/idempotency-cyclic.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const redis = new Redis(REDIS_URL);
const prefix = runPrefix('idem-cyclic');
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  redis.disconnect();
});

cyclicResultSuite({ label: 'the Redis store', store: () => createRedisStore({ client: redis, prefix }) });
