#!/usr/bin/env node
// Redis time per idempotency operation in a full batch of idempotency-batch.lua (INFO
// commandstats, EVALSHA usec, read before and after: nothing is reset on a shared server), by
// what the entries do: begins that acquire a new key (HMGET, HSET, PEXPIRE), begins that find
// a completed record (HMGET only), completes that find a live lease (HMGET, HSET, PEXPIRE).
// 100 script calls of 128 entries each per case. Other clients' EVALSHA in the meantime count
// too: run it on a quiet server.
// Usage: npm run build && node scripts/redis-idempotency-cost.mjs [redis-url]
import { Redis } from 'ioredis';
import { scripts } from 'onceflow/redis';
import { evalshaStats, unlinkPrefix } from '../bench/lib/redis.mjs';

const url = process.argv[2] ?? 'redis://127.0.0.1:6379';
const client = new Redis(url);
const prefix = `onceflow-idem-cost:${process.pid}:`;
const BATCH = 128;
const CALLS = 100;
const script = scripts.idempotencyBatch;
const hash = 'x'.repeat(43); // a sha256 in base64url
const token = '0123456789abcdef0123456789abcdef0123'; // a randomUUID
const value = '{"charged":12,"ok":true}';

const key = (i) => `${prefix}{idem:cost:${i}}:r`;
async function batch(from, op, a, b, c) {
  const keys = [];
  const args = [];
  for (let i = from; i < from + BATCH; i++) {
    keys.push(key(i));
    args.push(op, a, b, c);
  }
  return client.call('EVALSHA', script.sha1, keys.length, ...keys, ...args);
}

await client.script('LOAD', script.text);
const cases = [
  ['begin, acquires a new key', (r) => batch(r * BATCH, 'b', hash, token, '60000')],
  ['complete, live lease', (r) => batch(r * BATCH, 'c', token, value, '60000')],
  ['begin, finds it completed', (r) => batch(r * BATCH, 'b', hash, token, '60000')],
];
for (const [name, run] of cases) {
  const before = await evalshaStats(client);
  for (let r = 0; r < CALLS; r++) await run(r);
  const after = await evalshaStats(client);
  const usec = after.usec - before.usec;
  const calls = after.calls - before.calls;
  console.log(
    `${name.padEnd(28)} ${(usec / (calls * BATCH)).toFixed(2)} µs per entry, ${(usec / calls).toFixed(0)} µs per call of ${BATCH}`,
  );
}
await unlinkPrefix(client, prefix);
client.disconnect();
