#!/usr/bin/env node
// Script calls and Redis time per ledger apply on a Redis Cluster, by how a turn's applies are
// sent: one script per slot (each its own write), one script per slot pipelined per node (ioredis
// enableAutoPipelining: one write per node), or one node-variant script per node
// (src/redis/node-batch.ts); and on one standalone Redis for comparison. Workload: the
// redis-ledger bench's (28,450 settlement deliveries to 2,000 players, 200 lanes, journal off),
// one process. Starts its own 3-master cluster and standalone Redis (redis-server on the PATH);
// the modes are interleaved, 4 rounds (the first is warm-up), medians reported.
// Redis figures: INFO commandstats (EVALSHA + EVAL calls and usec) summed over the masters.
// Usage: npm run build && node scripts/cluster-batch-cost.mjs
import { Cluster, Redis } from 'ioredis';
import { createLedger, defineSignature } from 'onceflow';
import { createRedisStore } from 'onceflow/redis';
import { startCluster, startRedis } from 'onceflow/testing';
import { commandStats } from '../bench/lib/redis.mjs';
import {
  applyInLanes,
  redisLedgerWorkload,
  registerRooms,
  SETTLEMENT_FIELDS,
} from '../bench/lib/workload.mjs';
import { nodeBatching } from '../dist/redis/node-batch.js';

const ROUNDS = 4;
const { stream, lanes } = redisLedgerWorkload(defineSignature(SETTLEMENT_FIELDS));
const cluster = await startCluster();
const standalone = await startRedis();
const masters = cluster.ports.slice(0, 3);
const seeds = masters.map((port) => ({ host: '127.0.0.1', port }));
const clients = {
  'per slot': new Cluster(seeds),
  'per-node pipeline': new Cluster(seeds, { enableAutoPipelining: true }),
  'per-node script': new Cluster(seeds),
  standalone: new Redis(standalone.port, '127.0.0.1'),
};
const admins = {
  cluster: masters.map((port) => new Redis(port, '127.0.0.1')),
  standalone: [new Redis(standalone.port, '127.0.0.1')],
};

const stats = async (nodes) => {
  const { scriptCalls, scriptUsec } = await commandStats(nodes);
  return { calls: scriptCalls, usec: scriptUsec };
};

const results = Object.fromEntries(Object.keys(clients).map((mode) => [mode, []]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const [mode, client] of Object.entries(clients)) {
      nodeBatching.enabled = mode !== 'per slot' && mode !== 'per-node pipeline';
      const nodes = mode === 'standalone' ? admins.standalone : admins.cluster;
      const ledger = createLedger({
        store: createRedisStore({ client, prefix: `cost:${mode}:`, journal: { maxEntriesPerOwner: 0 } }),
        capacity: 4,
        name: `r${round}`,
      });
      await registerRooms(ledger, stream); // untimed: registrations, scripts loaded
      for (const node of nodes) await node.config('RESETSTAT');
      const cpu = process.cpuUsage();
      const start = performance.now();
      await applyInLanes(ledger, stream, lanes);
      const ms = performance.now() - start;
      const used = process.cpuUsage(cpu);
      const { calls, usec } = await stats(nodes);
      if (round === 0) continue;
      results[mode].push({
        'applies/s': (stream.length / ms) * 1000,
        'client µs/apply': (used.user + used.system) / stream.length,
        'script calls/apply': calls / stream.length,
        'Redis µs/apply': usec / stream.length,
        'Redis µs/call': usec / calls,
      });
    }
  }
} finally {
  for (const client of Object.values(clients)) client.disconnect();
  for (const node of [...admins.cluster, ...admins.standalone]) node.disconnect();
  await cluster.stop();
  await standalone.remove();
}

const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
const table = {};
for (const [mode, rows] of Object.entries(results)) {
  table[mode] = {};
  for (const key of Object.keys(rows[0])) {
    const m = median(rows.map((row) => row[key]));
    table[mode][key] = Number(m.toFixed(key === 'script calls/apply' ? 3 : key === 'applies/s' ? 0 : 1));
  }
}
console.table(table);
