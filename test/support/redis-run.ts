import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { cleanupPrefix, REDIS_URL, runPrefix } from '../integration/redis-env.js';

/**
 * A client on the run's Redis and a key prefix unique to this run (`runPrefix(name)`); after the
 * file's tests, every key under the prefix is removed and the client disconnected. Call at the
 * top level of a test file.
 */
export function redisRun(name: string): { client: Redis; prefix: string } {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix(name);
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });
  return { client, prefix };
}
