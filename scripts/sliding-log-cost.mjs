#!/usr/bin/env node
// Server time per sliding-log decision on Redis as the log grows (the derivation of
// STRING_LOG_MAX in src/redis/lua/limiter-take.lua): for each limit, one key's log is filled to
// limit - 1 000 entries (window 1 min, so none expires), then 2 000 decisions are timed by
// INFO commandstats (up to 1 000 admitted, the rest refused). Prints Redis µs per decision and
// the key's MEMORY USAGE. Usage: npm run build && node scripts/sliding-log-cost.mjs [redis-url]
import { Redis } from 'ioredis';
import { createLimiter } from 'onceflow';
import { createRedisStore } from 'onceflow/redis';
import { unlinkPrefix } from '../bench/lib/redis.mjs';

const client = new Redis(process.argv[2] ?? 'redis://127.0.0.1:6379');
const prefix = `onceflow-log-cost:${process.pid}:`;
const rows = [];
for (const limit of [100, 300, 512, 513, 1000, 10_000]) {
  const limiter = createLimiter({
    store: createRedisStore({ client, prefix }),
    name: `l${limit}`,
    algorithm: 'sliding-log',
    limit,
    window: '1m',
    blockCache: false,
  });
  const inFlight = async (n) => {
    let started = 0;
    await Promise.all(
      Array.from({ length: 200 }, async () => {
        while (started < n) {
          started++;
          await limiter.take('hot');
        }
      }),
    );
  };
  await inFlight(Math.max(0, limit - 1000));
  await client.config('RESETSTAT');
  await inFlight(2000);
  const stats = /cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(await client.info('commandstats'));
  const [key] = await client.keys(`${prefix}{|l:l${limit}:hot}:*`);
  rows.push({
    limit,
    representation: (await client.type(key)) === 'zset' ? 'sorted set' : 'string',
    'redis µs per decision': Number((Number(stats?.[1]) / 2000).toFixed(1)),
    'key bytes': await client.memory('USAGE', key),
  });
}
console.table(rows);
await unlinkPrefix(client, prefix);
await client.quit();
