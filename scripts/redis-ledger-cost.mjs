#!/usr/bin/env node
// Where a Redis ledger apply spends its time: client CPU (process.cpuUsage) and Redis time (INFO
// commandstats, EVALSHA usec) per apply, over the redis-ledger bench's workload (28,450 settlement
// deliveries to 2,000 players, 200 lanes, journal off), 6 runs (the first is warm-up).
// Usage: npm run build && node scripts/redis-ledger-cost.mjs [redis-url]
import { Redis } from 'ioredis';
import { createLedger, defineSignature } from 'onceflow';
import { createRedisStore } from 'onceflow/redis';
import { unlinkPrefix } from '../bench/lib/redis.mjs';
import {
  applyInLanes,
  redisLedgerWorkload,
  registerRooms,
  SETTLEMENT_FIELDS,
} from '../bench/lib/workload.mjs';

const url = process.argv[2] ?? 'redis://127.0.0.1:6379';
const client = new Redis(url);
const admin = new Redis(url);
const { stream, lanes } = redisLedgerWorkload(defineSignature(SETTLEMENT_FIELDS));
const prefix = `onceflow-ledger-cost:${process.pid}:`;
const rows = [];
for (let run = 0; run < 6; run++) {
  const ledger = createLedger({
    store: createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: 0 } }),
    capacity: 4,
    name: `run${run}`,
  });
  await registerRooms(ledger, stream); // untimed
  await admin.config('RESETSTAT');
  const cpu = process.cpuUsage();
  const start = performance.now();
  await applyInLanes(ledger, stream, lanes);
  const ms = performance.now() - start;
  const used = process.cpuUsage(cpu);
  const stats = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await admin.info('commandstats'));
  if (run === 0) continue;
  rows.push({
    'applies/s': Math.round((stream.length / ms) * 1000),
    'client µs/apply': Number(((used.user + used.system) / stream.length).toFixed(1)),
    'Redis µs/apply': Number((Number(stats?.[2]) / stream.length).toFixed(1)),
    'applies/script': Number((stream.length / Number(stats?.[1])).toFixed(1)),
  });
}
console.table(rows);
await unlinkPrefix(client, prefix);
client.disconnect();
admin.disconnect();
