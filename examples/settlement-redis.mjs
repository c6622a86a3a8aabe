// The same settlement consumer, shared by several processes through Redis (or Redis Cluster).
// Run: npm run build && REDIS_URL=redis://127.0.0.1:6379 node examples/settlement-redis.mjs
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { createLedger, defineSignature } from 'onceflow';
import { createRedisStore } from 'onceflow/redis';

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);
const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const prefix = `example-settlement:${process.pid}:`; // one key space per application
// 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap.
const ledger = createLedger({
  store: createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: 1_000 } }),
  capacity: 4,
});

const s = { room: 'A', round: 1, net: 500, final: false };
const entry = { owner: 'alice', signature: settlement(s), deltas: { coins: s.net }, scope: s.room, order: 1 };

// Ten consumers receive the same message at once (a redelivery storm): it is applied once.
const results = await Promise.all(Array.from({ length: 10 }, () => ledger.apply(entry)));
const outcomes = results.map((r) => r.outcome);
console.log(outcomes.join(' '));
assert.equal(outcomes.filter((o) => o === 'applied').length, 1);
assert.deepEqual(await ledger.balances('alice'), { coins: 500n });
assert.deepEqual(await ledger.totals('A'), { coins: 500n });

// Clean up this example's keys (an application keeps them, of course).
let cursor = '0';
do {
  const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
  cursor = next;
  for (const key of keys) await client.unlink(key);
} while (cursor !== '0');
await client.quit();
