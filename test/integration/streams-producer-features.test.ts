// Redis 8.6 idempotent XADD detection (streamFeatures; its reply parsing is tested in
// src/streams/redis-features.test.ts), and the fallback on this Redis (7.0): the script path.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createStreamProducer } from '../../src/streams/producer.js';
import { dedupKeys } from '../../src/streams/producer-options.js';
import { streamFeatures } from '../../src/streams/redis-features.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

describe('idempotent XADD detection', () => {
  const redis = new Redis(REDIS_URL);
  const prefix = runPrefix('streams-features');
  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });

  it('finds no IDMP on Redis 7.x, and the producer dedups by its script there', async () => {
    const version = /redis_version:(\d+)\.(\d+)/.exec(await redis.info('server'));
    const [major, minor] = [Number(version?.[1]), Number(version?.[2])];
    const has = (await streamFeatures(redis)).addIdempotent;
    expect(has).toBe(major > 8 || (major === 8 && minor >= 6));
    const stream = `${prefix}{fallback}`;
    const p = createStreamProducer({ client: redis, stream });
    const first = await p.publish({ n: 1 }, { id: 'f1' });
    expect(await p.publish({ n: 1 }, { id: 'f1' })).toBe(first);
    // The script's own record holds the id: the fallback path ran.
    expect(await redis.hget(dedupKeys(stream)[0], 'f1')).toBe(first);
    await p.close();
  });
});
