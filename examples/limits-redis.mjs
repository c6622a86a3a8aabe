// Rate limits shared by every process through Redis: one key per user, decided by one Lua
// script with Redis time; a per-tenant registry; degraded mode if Redis goes away.
// Run: npm run build && REDIS_URL=redis://127.0.0.1:6379 node examples/limits-redis.mjs
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { createLimiter, createTenantRegistry } from 'onceflow';
import { createRedisStore } from 'onceflow/redis';

const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const prefix = `example-limits:${process.pid}:`;
const store = createRedisStore({ client, prefix });

try {
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
  // Well within one minute, so no bucket has left the window yet: exactly the limit passes.
  assert.equal(allowed, 100);
  assert.equal(last.allowed, false);
  assert.ok(last.retryAfterMs > 0 && last.retryAfterMs <= 60_000);
  console.log(
    `customer-42: ${allowed} of 120 allowed; last: ${last.reason}, retry in ${last.retryAfterMs} ms`,
  );

  const tenants = createTenantRegistry({ store });
  const events = [];
  tenants.on((e) => {
    events.push(e.type);
    console.log('tenant event', e.type, e.tenant);
  });
  tenants.init('acme', { algorithm: 'gcra', limit: 10, window: '1s', burst: 3 });
  const burst = [];
  for (let i = 0; i < 5; i++) burst.push((await tenants.take('acme', 'user-1')).allowed);
  console.log('acme burst of 5 (burst 3):', burst.join(' '));
  // The burst of 3 passes at once; the next request only 100 ms (1 s / 10) after the first.
  assert.deepEqual(burst.slice(0, 3), [true, true, true]);
  assert.ok(burst.includes(false));
  await tenants.reset('acme');
  const afterReset = (await tenants.take('acme', 'user-1')).allowed;
  assert.equal(afterReset, true);
  console.log('after reset:', afterReset);
  tenants.close('acme');
  assert.deepEqual(events, ['init', 'reset', 'close']);
} finally {
  for (const key of await client.keys(`${prefix}*`)) await client.unlink(key);
  await client.quit();
}
