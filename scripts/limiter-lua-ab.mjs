#!/usr/bin/env node
// Redis server time per limiter decision of two or more builds of limiter-take.lua, on the limiter
// bench's workload (bench/limiter.bench.mjs: 5,000 keys + 10 hot keys taking 10% of takes, limit
// 50 per 1 s, batches of 100 decisions as 200 takes in flight make them, time advancing as at
// ~180,000 takes/s). The builds' scripts run the same batches, interleaved; INFO commandstats
// (evalsha usec) measures each. Nothing of the client is timed: this is the server's share, which
// bounds the Redis limiter's throughput at concurrency 200.
// A build is a copy of `dist/`, e.g. the one before a change:
//   git stash && npm run build && cp -r dist /tmp/before && git stash pop && npm run build
// Usage: node scripts/limiter-lua-ab.mjs <dist> [<dist> ...] [--algorithms=sliding-log,gcra,...] [--redis=URL]
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { evalshaStats, limiterTakeArg, unlinkPrefix } from '../bench/lib/redis.mjs';
import { prng } from '../bench/lib/workload.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const dists = args.filter((a) => !a.startsWith('--'));
if (dists.length === 0) {
  console.error(
    'usage: node scripts/limiter-lua-ab.mjs <dist> [<dist> ...] [--algorithms=sliding-log,gcra,...] [--redis=URL]',
  );
  process.exit(2);
}
const BATCH = 100; // ~half of 200 in flight: the batcher sends what gathered while one batch was out
const BATCHES = 400; // 40,000 decisions per build and algorithm, as the bench's Redis run
const RATE = 180; // decisions per ms, the bench's order of magnitude: how fast its clock advances
const client = new Redis(option('redis', 'redis://127.0.0.1:6379'));
const prefix = `onceflow-lua-ab:${process.pid}:`;
const load = (d, file) => import(pathToFileURL(resolve(d, file)).href);
const builds = await Promise.all(
  dists.map(async (d) => ({
    script: (await load(d, 'redis/scripts.generated.js')).scripts.limiterTake,
    // Each dist's own letter for an algorithm: two versions of the script may store an algorithm
    // in different forms, each under its own letter, so the letter comes from the same dist.
    codeOf: (await load(d, 'windows/limits/algorithms.js')).codeOf,
  })),
);
const shas = await Promise.all(builds.map((b) => client.script('LOAD', b.script.text)));
const random = prng(20261202);
const subjects = Array.from({ length: BATCHES * BATCH }, () =>
  random() < 0.1 ? `hot-${Math.floor(random() * 10)}` : `user-${Math.floor(random() * 5000)}`,
);
const usec = async () => (await evalshaStats(client)).usec;

for (const algorithm of option('algorithms', 'sliding-log,gcra,fixed-window').split(',')) {
  const param = algorithm === 'sliding-window' ? 100 : algorithm === 'gcra' ? 50 : 0;
  const spent = shas.map(() => 0);
  const start = Date.now();
  for (let b = 0; b < BATCHES; b++) {
    // Each build decides the same batch on keys of its own, the order of builds flipped each batch.
    const order = shas.map((_, i) => i);
    if (b % 2 === 1) order.reverse();
    for (const i of order) {
      const code = builds[i].codeOf({ algorithm, limit: 50, windowMs: 1000, param });
      const keys = [];
      const times = [];
      for (let e = 0; e < BATCH; e++) {
        const n = b * BATCH + e;
        keys.push(`${prefix}${i}:{${subjects[n]}}:${code}`);
        times.push(start + Math.floor(n / RATE));
      }
      const arg = limiterTakeArg(code, 50, 1000, param, times);
      const before = await usec();
      await client.evalsha(shas[i], keys.length, ...keys, arg);
      spent[i] += (await usec()) - before;
    }
  }
  const per = spent.map((us) => us / (BATCHES * BATCH));
  console.log(
    `${algorithm}: ` +
      dists
        .map((d, i) => `${d} ${per[i].toFixed(2)} µs${i ? ` (${(per[i] / per[0]).toFixed(3)}x)` : ''}`)
        .join(' | '),
  );
}
await unlinkPrefix(client, prefix);
client.disconnect();
