#!/usr/bin/env node
// Measures the Redis memory one owner costs (MEMORY USAGE of each of its keys): the figures of
// docs/redis.md, *Memory per owner*.
// Usage: npm run build && node scripts/redis-memory.mjs [redis-url]
import { Redis } from 'ioredis';
import { createLedger, defineSignature } from 'onceflow';
import { createRedisStore, escapeId } from 'onceflow/redis';
import { unlinkPrefix } from '../bench/lib/redis.mjs';

const url = process.argv[2] ?? 'redis://127.0.0.1:6379';
const client = new Redis(url);
const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);
const rows = [];
for (const [label, journal] of [
  ['journal kept: none', { maxEntriesPerOwner: 0 }],
  ['journal kept: newest 100', { maxEntriesPerOwner: 100 }],
]) {
  const prefix = `onceflow-memory:${process.pid}:${rows.length}:`;
  // 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap.
  const ledger = createLedger({ store: createRedisStore({ client, prefix, journal }), capacity: 4 });
  const owners = 100;
  for (let p = 0; p < owners; p++) {
    for (let round = 1; round <= 200; round++) {
      for (const final of [false, true]) {
        const s = { room: `room-${round % 7}`, round, net: (round * 37) % 1000, final };
        await ledger.apply({
          owner: `player-${p}`,
          signature: settlement(s),
          deltas: { coins: s.net },
          scope: s.room,
          order: round * 2 + (final ? 1 : 0),
        });
      }
    }
  }
  const sizes = {};
  for (const suffix of ['s', 'j']) {
    let total = 0;
    for (let p = 0; p < owners; p++) {
      const key = `${prefix}{${escapeId('default')}:${escapeId(`player-${p}`)}}:${suffix}`;
      total += (await client.memory('USAGE', key, 'SAMPLES', '0')) ?? 0;
    }
    sizes[suffix] = Math.round(total / owners);
  }
  rows.push({ label, ...sizes, total: Object.values(sizes).reduce((a, b) => a + b, 0) });
  await unlinkPrefix(client, prefix);
}
console.log('bytes per owner (capacity 4, 400 settlements applied, 7 rooms), by key:');
console.log(
  's = state hash (balances, counter, horizon, orders, window in one field; scope shares), j = journal stream',
);
console.table(rows);
await client.quit();
