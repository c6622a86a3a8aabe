#!/usr/bin/env node
// What a ledger resolve costs Redis (INFO commandstats, EVALSHA µs per resolve) on one owner
// whose journal holds N entries (orders 1..N, retention N + 1: nothing dropped): a repeat found
// near the newest entry, one found at the oldest (the whole journal read, in steps of 1000), and a
// new entry (the whole journal read, then booked). Run it on a Redis of its own: other clients'
// scripts would count in the figures (it says so when they did).
// Usage: npm run build && node scripts/redis-resolve-cost.mjs [redis-url] [N ...]
import { Redis } from 'ioredis';
import { createLedger } from 'onceflow';
import { createRedisStore } from 'onceflow/redis';
import { evalshaStats, unlinkPrefix } from '../bench/lib/redis.mjs';

const given = process.argv.slice(2);
const url = /^rediss?:\/\//.test(given[0] ?? '') ? given.shift() : 'redis://127.0.0.1:6379';
const sizes = given.length > 0 ? given.map(Number) : [100, 1000, 10_000];
const client = new Redis(url);
const prefix = `onceflow-resolve-cost:${process.pid}:`;
// Resolves per figure: enough that the per-call figure does not hang on one slow call.
const REPEATS = 50;

try {
  const rows = [];
  for (const n of sizes) {
    const store = createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: n + 1 } });
    const ledger = createLedger({ store, capacity: 4, name: `n${n}` });
    const entry = (i, signature = `s${i}`) => ({ owner: 'p', signature, deltas: { coins: 1 }, order: i });
    for (let i = 1; i <= n; i++) await ledger.apply(entry(i));
    const measure = async (what, make) => {
      const before = await evalshaStats(client);
      const start = performance.now();
      for (let k = 0; k < REPEATS; k++) await ledger.resolve(make(k));
      const ms = performance.now() - start;
      const after = await evalshaStats(client);
      rows.push({
        'journal entries': n,
        resolve: what,
        'script calls each': Number(((after.calls - before.calls) / REPEATS).toFixed(1)),
        'Redis µs each': Math.round((after.usec - before.usec) / REPEATS),
        'wall ms each': Number((ms / REPEATS).toFixed(2)),
      });
    };
    await measure('repeat near the newest', () => entry(n - 10));
    await measure('repeat at the oldest', () => entry(1));
    await measure('new entry (read through, booked)', (k) => entry(0, `new-${k}`));
  }
  console.table(rows);
} finally {
  await unlinkPrefix(client, prefix);
  client.disconnect();
}
