// Rate limits shared by every process through Redis: one key per user, decided by one Lua
// script with Redis time; a per-tenant registry; degraded mode if Redis goes away.
// Run: npm run build && REDIS_URL=redis://127.0.0.1:6379 node examples/limits-redis.mjs
import { Redis } from 'ioredis';
import { createLimiter, createTenantRegistry } from 'onceflow';
import { createRedisStore } from 'onceflow/redis';

const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const prefix = `example-limits:${process.pid}:`;
const store = createRedisStore({ client, prefix });

// 4 nodes share the limit; if Redis fails, each decides alone with a quarter of it.
const limiter = createLimiter({
  store,
  name: 'api',
  algorithm: 'sliding-window',
  limit: 100,
  window: '1m',
  granularity: '1s',
  degraded: { mode: 'local', share: 1 / 4 },
});
let allowed = 0;
let last;
for (let i = 0; i < 120; i++) {
  last = await limiter.take('customer-42');
  if (last.allowed) allowed++;
}
console.log(`customer-42: ${allowed} of 120 allowed; last: ${last.reason}, retry in ${last.retryAfterMs} ms`);

const tenants = createTenantRegistry({ store });
tenants.on((e) => console.log('tenant event', e.type, e.tenant));
tenants.init('acme', { algorithm: 'gcra', limit: 10, window: '1s', burst: 3 });
const burst = [];
for (let i = 0; i < 5; i++) burst.push((await tenants.take('acme', 'user-1')).allowed);
console.log('acme burst of 5 (burst 3):', burst.join(' '));
await tenants.reset('acme');
console.log('after reset:', (await tenants.take('acme', 'user-1')).allowed);
tenants.close('acme');

for (const key of await client.keys(`${prefix}*`)) await client.unlink(key);
await client.quit();
