#!/usr/bin/env node
// Where stream-apply-ack.lua spends Redis time per entry, and what the fair floor of the streams
// bench (bench/lib/streams-floor.mjs) spends on the same entries. Records the script calls a
// ledger consumer makes over the streams bench's workload (20,000 events + 1 in 20 repeated, 2,000
// players, capacity 4, journal kept), then replays them one call at a time, on fresh owner keys
// and a fresh group holding every entry pending as the recorded consumer's first delivery (so the
// fence sees what it saw), through the script, through copies with one part taken out or changed,
// and through any script files given; then the floor's script over the same entries, 64 a call.
// Prints Redis µs per entry (INFO commandstats, EVALSHA) per variant, median of 5 interleaved
// phases. The copies give wrong answers on purpose: they only measure. It starts a Redis server of
// its own (no other client's scripts in its figures). A file is a whole script as Redis runs it:
//   node -e "import('./dist/redis/scripts.generated.js').then((m) => process.stdout.write(m.scripts.streamApplyAck.text))" > old.lua
// Usage: npm run build && node scripts/stream-apply-ack-cost.mjs [file.lua ...]
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { evalshaStats } from '../bench/lib/redis.mjs';
import { FLOOR_BATCH, FLOOR_SCRIPT, floorKeys } from '../bench/lib/streams-floor.mjs';
import { prng } from '../bench/lib/workload.mjs';
import { scripts } from '../dist/redis/scripts.generated.js';
import { createStreamConsumer } from '../dist/streams/index.js';
import { startRedis } from '../dist/testing/index.js';

const EVENTS = 20_000;
const PLAYERS = 2_000;
const PHASES = 5;
const given = process.argv.slice(2);
const server = await startRedis(['--appendonly', 'no']);
const client = new Redis(server.port);
const stream = 'cost:{s}events';
const prefix = 'cost:ledger:';

try {
  // The bench's workload: one event in 20 published twice in a row.
  const random = prng(19);
  const pipeline = client.pipeline();
  for (let i = 0; i < EVENTS; i++) {
    const e = {
      id: `ev-${i}`,
      player: `player-${Math.floor(random() * PLAYERS)}`,
      net: Math.floor(random() * 2001) - 1000,
    };
    const fields = ['e', JSON.stringify(e), 'i', e.id];
    pipeline.xadd(stream, '*', ...fields);
    if (i % 20 === 19) pipeline.xadd(stream, '*', ...fields);
  }
  await pipeline.exec();
  const entries = Number(await client.xlen(stream));

  // Record the consumer's stream-apply-ack calls (EVALSHA, its keys and arguments).
  const calls = [];
  const call = client.call.bind(client);
  client.call = (...args) => {
    if (args[0] === 'EVALSHA' && args[1] === scripts.streamApplyAck.sha1) calls.push(args.slice(2));
    return call(...args);
  };
  const ac = new AbortController();
  let answered = 0;
  await createStreamConsumer({
    client,
    stream,
    group: 'rec',
    consumer: 'bench',
    concurrency: 16,
    block: '100ms',
    ledger: {
      prefix: `${prefix}rec:`,
      capacity: 4,
      entry: (d) => ({ owner: d.event.player, signature: d.eventId, deltas: { coins: BigInt(d.event.net) } }),
    },
    observer: (e) => {
      if (e.type === 'applied' && ++answered === entries) ac.abort();
    },
    signal: ac.signal,
  }).run();
  client.call = call;

  const text = scripts.streamApplyAck.text;
  const cut = (...pairs) => {
    let t = text;
    for (let i = 0; i < pairs.length; i += 2) {
      if (!t.includes(pairs[i])) return undefined;
      t = t.replace(pairs[i], pairs[i + 1]);
    }
    return t;
  };
  const variants = [
    ['the script', text],
    [
      'only the decode',
      cut(
        'local args = cjson.decode(ARGV[3])',
        "local args = cjson.decode(ARGV[3])\nif true then return '[]' end",
      ),
    ],
    [
      'the fence and one XACK, no booking',
      cut('reply = book(KEYS[k], KEYS[k + 1], a + 3)', 'reply = \'["applied","",{}]\''),
    ],
    [
      'without the fence',
      cut(
        "redis.call('XPENDING', KEYS[1], group, ARGV[7], ARGV[8], ARGV[9], consumer)",
        '{}',
        'if count == nil then',
        'if false then',
        'fenced = count ~= token',
        'fenced = false',
      ),
    ],
    [
      'without the HMGET (every owner new)',
      cut("or redis.call('HMGET', state_key, 's', 'r')", 'or { false, false }'),
    ],
    ['without the HSET', cut("        redis.call('HSET', state_key, 's', state, 'r', runs)\n", '')],
    [
      'a journal row of 2 fields',
      cut("'seq', reply_seq, 'sig', signature, 's', seconds, 'us', us,", "'sig', signature,"),
    ],
    ['without the replay marks', cut("runs = remember(runs, at, call, 'a', reply_seq)", 'runs = runs')],
    [
      'without the window check',
      cut(
        "if state and in_window(state, '\\255' .. signature .. '\\255', window_at) then outcome = 'duplicate' end",
        '',
      ),
    ],
    ['without the balances add', cut('      balances = add_balances(balances, args, first, a - 1)\n', '')],
    ['without the journal XADD', cut("if limit ~= '0' then", 'if false then')],
    ['an XACK per entry', cut('acked[#acked + 1] = id', "redis.call('XACK', stream, group, id)")],
    ...given.map((file) => [file, readFileSync(file, 'utf8')]),
  ];

  // The floor's calls: the same entries in stream order, FLOOR_BATCH a call.
  const all = await client.xrange(stream, '-', '+');
  const floorCalls = [];
  for (let at = 0; at < all.length; at += FLOOR_BATCH) {
    const keys = [stream];
    const args = ['GROUP'];
    for (const [id, flat] of all.slice(at, at + FLOOR_BATCH)) {
      const e = JSON.parse(flat[1]);
      keys.push(...floorKeys('KEYS:', e.player));
      args.push(id, flat[3], String(e.net));
    }
    floorCalls.push([keys, args]);
  }
  const floorSha = await client.script('LOAD', FLOOR_SCRIPT);

  // A fresh group with every entry pending as 'bench''s first delivery (the recorded tokens).
  let groups = 0;
  async function freshGroup() {
    const group = `g${groups++}`;
    await client.call('XGROUP', 'CREATE', stream, group, '0');
    await client.call('XREADGROUP', 'GROUP', group, 'bench', 'COUNT', entries, 'STREAMS', stream, '>');
    return group;
  }
  async function measure(run) {
    const before = await evalshaStats(client);
    await run();
    const after = await evalshaStats(client);
    return (after.usec - before.usec) / entries;
  }

  const rows = new Map();
  const add = (name, us) => rows.set(name, [...(rows.get(name) ?? []), us]);
  for (let phase = 0; phase < PHASES; phase++) {
    for (const [name, body] of variants) {
      if (body === undefined) {
        if (phase === 0) console.log(`${name}: the script changed, this cut no longer applies`);
        continue;
      }
      const sha = await client.script('LOAD', body);
      const group = await freshGroup();
      const keyPrefix = `${prefix}v${groups}:`;
      add(
        name,
        await measure(async () => {
          for (const c of calls) {
            // [numberOfKeys, ...keys, group, ...the rest of the arguments]
            const n = Number(c[0]);
            const keys = c.slice(1, 1 + n).map((k) => k.replace(`${prefix}rec:`, keyPrefix));
            const args = [group, ...c.slice(2 + n)];
            await client.call('EVALSHA', sha, n, ...keys, ...args);
          }
        }),
      );
      await client.call('XGROUP', 'DESTROY', stream, group);
    }
    const group = await freshGroup();
    add(
      'the fair floor (bench/lib/streams-floor.mjs)',
      await measure(async () => {
        for (const [keys, args] of floorCalls) {
          const k = keys.map((key) => key.replace('KEYS:', `floor${groups}:`));
          await client.call('EVALSHA', floorSha, k.length, ...k, group, ...args.slice(1));
        }
      }),
    );
    await client.call('XGROUP', 'DESTROY', stream, group);
  }
  console.log(
    `${entries} entries, ${calls.length} stream-apply-ack calls (${(entries / calls.length).toFixed(1)} entries a call); ` +
      `${floorCalls.length} floor calls; Redis µs per entry, median of ${PHASES}:`,
  );
  console.table(
    [...rows].map(([variant, v]) => ({
      variant,
      'Redis µs/entry': Number(v.sort((a, b) => a - b)[v.length >> 1].toFixed(2)),
    })),
  );
} finally {
  client.disconnect();
  await server.remove();
}
