#!/usr/bin/env node
// What each part of ledger-apply.lua costs Redis, and what another version of it costs: records the
// script's batches over the redis-ledger bench's workload (28,450 settlement deliveries to 2,000
// players, 200 lanes, journal off), then replays them, one batch at a time on fresh keys, through
// the script, through copies with one part taken out, and through any script files given, and
// prints Redis µs per apply (INFO commandstats, EVALSHA) for each. Variants run interleaved, 5
// phases. The copies give wrong answers on purpose: they only measure. A file is a whole script as
// Redis runs it (includes expanded), e.g. another build's:
//   node -e "import('./dist/redis/scripts.generated.js').then((m) => process.stdout.write(m.scripts.ledgerApply.text))" > old.lua
// Usage: npm run build && node scripts/redis-ledger-lua-parts.mjs [redis-url] [file.lua ...]
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { createLedger, defineSignature } from 'onceflow';
import { createRedisStore } from 'onceflow/redis';
import { evalshaStats, unlinkPrefix } from '../bench/lib/redis.mjs';
import {
  applyInLanes,
  redisLedgerWorkload,
  registerRooms,
  SETTLEMENT_FIELDS,
} from '../bench/lib/workload.mjs';
import { scripts } from '../dist/redis/scripts.generated.js';

const given = process.argv.slice(2);
const url = /^rediss?:\/\//.test(given[0] ?? '') ? given.shift() : 'redis://127.0.0.1:6379';
const client = new Redis(url);
const admin = new Redis(url);
const { stream, lanes } = redisLedgerWorkload(defineSignature(SETTLEMENT_FIELDS));
const prefix = `onceflow-lua-parts:${process.pid}:`;

try {
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
        "redis.call('HSET', state_key, 's', state, 'r', runs, 'm', trail, total_field, add(got[4] or '0', args[first + 1]))",
        "local _ = add(got[4] or '0', args[first + 1])",
      ),
    ],
    [
      'without the HMGET',
      cut(
        "got = redis.call('HMGET', state_key, 's', 'r', 'm', total_field)",
        'got = { false, false, false, false }',
      ),
    ],
    ['without the balances update', cut('      balances = add_balances(balances, args, first, a - 1)\n', '')],
    [
      'without the runs list (lost-reply guard) update',
      cut("runs = remember(runs, at, call, 'a', reply_seq)", 'runs = runs'),
    ],
    [
      'only the batch decode',
      cut(
        'local args = cjson.decode(ARGV[1])',
        "local args = cjson.decode(ARGV[1])\nif true then return '[]' end",
      ),
    ],
    ...given.map((file) => [file, readFileSync(file, 'utf8')]),
  ];

  // EVALSHA totals of the whole server (evalshaStats): a replay's delta must count exactly its own
  // batches, or another client ran scripts meanwhile and the figure is not this script's alone.
  const PHASES = 5;
  const rows = [];
  for (let rep = 0; rep < PHASES; rep++) {
    for (const [name, body] of variants) {
      if (body === undefined) {
        if (rep === 0) console.log(`${name}: the script changed, this cut no longer applies`);
        continue;
      }
      const sha = await admin.script('LOAD', body);
      const keyPrefix = `${prefix}v${rows.length}:`;
      const before = await evalshaStats(admin);
      for (const batch of batches) {
        const n = Number(batch[0]);
        const keys = batch.slice(1, 1 + n).map((k) => k.replace(`${prefix}rec:`, keyPrefix));
        await admin.evalsha(sha, n, ...keys, ...batch.slice(1 + n));
      }
      const after = await evalshaStats(admin);
      const usec = after.usec - before.usec;
      if (after.calls - before.calls !== batches.length) {
        console.log(`${name}, phase ${rep + 1}: other clients ran EVALSHA meanwhile; its figure counts them`);
      }
      rows.push({ variant: name, rep, 'Redis µs/apply': Number((usec / stream.length).toFixed(2)) });
      await unlinkPrefix(admin, keyPrefix);
    }
  }
  const by = new Map();
  for (const r of rows) by.set(r.variant, [...(by.get(r.variant) ?? []), r['Redis µs/apply']]);
  console.log(
    `${batches.length} batches, ${stream.length} applies; Redis µs per apply, median of ${PHASES}:`,
  );
  console.table(
    [...by].map(([variant, v]) => ({ variant, 'Redis µs/apply': v.sort((a, b) => a - b)[v.length >> 1] })),
  );
} finally {
  await unlinkPrefix(admin, prefix);
  client.disconnect();
  admin.disconnect();
}
