#!/usr/bin/env node
// Server time per sliding-log decision on Redis, string form (code 'd') against sorted set (code
// 'z'), at limits around STRING_LOG_MAX (src/windows/limits/algorithms.ts): the derivation of that bound.
// The limiter script is called directly, so either form can be measured at any limit. Per limit
// and form, one key's log is filled to its limit with entries W / L apart (window 1 min: a log
// full at a steady rate, deltas of their real length), then 2,000 decisions at the same pace are
// timed by INFO commandstats (evalsha usec, before and after), in batches of 100 as concurrent
// takes make them. Prints Redis µs per decision and the key's MEMORY USAGE for each form.
// Usage: npm run build && node scripts/sliding-log-cost.mjs [redis-url]
import { Redis } from 'ioredis';
import { evalshaStats, limiterTakeArg, unlinkPrefix } from '../bench/lib/redis.mjs';
import { scripts } from '../dist/redis/scripts.generated.js';

const client = new Redis(process.argv[2] ?? 'redis://127.0.0.1:6379');
const prefix = `onceflow-log-cost:${process.pid}:`;
const WINDOW = 60_000;
// Decisions per script call: what ~200 takes in flight gather (see limiter-lua-ab.mjs).
const BATCH = 100;
// Decisions timed per limit and form: ~50 ms of server time even where a decision costs 25 µs,
// far above INFO's 1 µs resolution; more only lengthens the run.
const MEASURED = 2_000;
const sha = await client.script('LOAD', scripts.limiterTake.text);
const usec = async () => (await evalshaStats(client)).usec;

/** `n` decisions of cost 1 on `key` from time `t`, `step` ms apart, in batches; the time after. */
async function decide(code, limit, key, n, t, step) {
  for (let done = 0; done < n; done += BATCH) {
    const size = Math.min(BATCH, n - done);
    const times = Array.from({ length: size }, () => (t += step));
    await client.evalsha(sha, size, ...Array(size).fill(key), limiterTakeArg(code, limit, WINDOW, 0, times));
  }
  return t;
}

const rows = [];
for (const limit of [256, 512, 768, 1024, 1536, 2048]) {
  const row = { limit };
  const step = Math.max(1, Math.round(WINDOW / limit));
  for (const code of ['d', 'z']) {
    const key = `${prefix}{${code}${limit}}`;
    const t = await decide(code, limit, key, limit, 1_733_000_000_000, step);
    const before = await usec();
    await decide(code, limit, key, MEASURED, t, step);
    const form = code === 'd' ? 'string' : 'sorted set';
    row[`${form} µs`] = Number((((await usec()) - before) / MEASURED).toFixed(1));
    row[`${form} bytes`] = await client.memory('USAGE', key);
  }
  rows.push(row);
}
console.table(rows);
await unlinkPrefix(client, prefix);
await client.quit();
