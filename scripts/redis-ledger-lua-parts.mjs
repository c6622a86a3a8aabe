#!/usr/bin/env node
// What each part of ledger-apply.lua costs Redis: records the script's batches over the
// redis-ledger bench's workload (28,450 settlement deliveries to 2,000 players, 200 lanes, journal
// off), then replays them, one batch at a time on fresh keys, through the script and through
// copies with one part taken out, and prints Redis µs per apply (INFO commandstats) for each.
// The copies give wrong answers on purpose: they only measure. 3 repetitions per variant.
// Usage: npm run build && node scripts/redis-ledger-lua-parts.mjs [redis-url]
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
import { scripts } from '../dist/redis/scripts.generated.js';

const url = process.argv[2] ?? 'redis://127.0.0.1:6379';
const client = new Redis(url);
const admin = new Redis(url);
const { stream, lanes } = redisLedgerWorkload(defineSignature(SETTLEMENT_FIELDS));
const prefix = `onceflow-lua-parts:${process.pid}:`;

// Record the batches the store sends (EVALSHA of ledger-apply), with their keys.
const batches = [];
const call = client.call.bind(client);
client.call = (...args) => {
  if (args[0] === 'EVALSHA' && args[1] === scripts.ledgerApply.sha1) batches.push(args.slice(2));
  return call(...args);
};
const ledger = createLedger({
  store: createRedisStore({ client, prefix: `${prefix}rec:`, journal: { maxEntriesPerOwner: 0 } }),
  capacity: 4,
});
await registerRooms(ledger, stream);
batches.length = 0;
await applyInLanes(ledger, stream, lanes);

const text = scripts.ledgerApply.text;
const cut = (from, to) => (text.includes(from) ? text.replace(from, to) : undefined);
const variants = [
  ['the script', text],
  [
    'without the HSET',
    cut(
      "redis.call('HSET', state_key, 's', state, scope_prefix .. args[first], add(got[2] or '0', args[first + 1]))",
      "local _ = add(got[2] or '0', args[first + 1])",
    ),
  ],
  [
    'without the HMGET',
    cut("got = redis.call('HMGET', state_key, 's', scope_prefix .. args[first])", 'got = { false, false }'),
  ],
  [
    'without the scope total (HGET/HSET of s only)',
    cut(
      "got = redis.call('HMGET', state_key, 's', scope_prefix .. args[first])",
      "got = { redis.call('HGET', state_key, 's') }",
    )?.replace(
      "redis.call('HSET', state_key, 's', state, scope_prefix .. args[first], add(got[2] or '0', args[first + 1]))",
      "redis.call('HSET', state_key, 's', state)",
    ),
  ],
  [
    'without cjson (balances)',
    cut('      local amounts = cjson.decode(balances)', "      local amounts = { coins = '1' }")?.replace(
      '      balances = cjson.encode(amounts)',
      `      balances = '{"coins":"1"}'`,
    ),
  ],
  [
    'only the batch decode',
    cut(
      'local args = cjson.decode(ARGV[1])',
      "local args = cjson.decode(ARGV[1])\nif true then return '[]' end",
    ),
  ],
];

const rows = [];
for (let rep = 0; rep < 3; rep++) {
  for (const [name, body] of variants) {
    if (body === undefined) {
      if (rep === 0) console.log(`${name}: the script changed, this cut no longer applies`);
      continue;
    }
    const sha = await admin.script('LOAD', body);
    const keyPrefix = `${prefix}v${rows.length}:`;
    await admin.config('RESETSTAT');
    for (const batch of batches) {
      const n = Number(batch[0]);
      const keys = batch.slice(1, 1 + n).map((k) => k.replace(`${prefix}rec:`, keyPrefix));
      await admin.evalsha(sha, n, ...keys, ...batch.slice(1 + n));
    }
    const stats = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await admin.info('commandstats'));
    rows.push({
      variant: name,
      rep,
      'Redis µs/apply': Number((Number(stats?.[2]) / stream.length).toFixed(2)),
    });
  }
}
const by = new Map();
for (const r of rows) by.set(r.variant, [...(by.get(r.variant) ?? []), r['Redis µs/apply']]);
console.log(`${batches.length} batches, ${stream.length} applies; Redis µs per apply, median of 3:`);
console.table([...by].map(([variant, v]) => ({ variant, 'Redis µs/apply': v.sort((a, b) => a - b)[1] })));
await unlinkPrefix(admin, prefix);
client.disconnect();
admin.disconnect();
