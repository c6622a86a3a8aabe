// Consumer processes killed mid-run (SIGKILL) and restarted from their last checkpoint: the
// settlements they re-apply are answered `duplicate` or `stale`, never applied twice, and every
// room's total is exact. Each worker owns the players of its partition (player % WORKERS), as the
// consumers of a partitioned queue do, and checkpoints its offset in Redis every CHECKPOINT
// deliveries, so a kill re-delivers up to that many.
// Run: npm run build && REDIS_URL=redis://127.0.0.1:6379 node examples/settlement-workers.mjs
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { Redis } from 'ioredis';
import { createLedger, defineSignature } from 'onceflow';
import { createRedisStore } from 'onceflow/redis';

const WORKERS = 3;
const PLAYERS = 30;
const ROUNDS = 40; // per player: 2 settlements each, 2,400 in all
const CHECKPOINT = 50;
const ROOMS = 5;

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

/** The settlements of `player`, in delivery order, every 7th delivered twice (at-least-once). */
function deliveriesOf(player) {
  const out = [];
  for (let r = 1; r <= ROUNDS; r++) {
    for (const final of [false, true]) {
      const s = {
        room: `room-${(player + r) % ROOMS}`,
        round: player * 1000 + r,
        net: ((player * 31 + r * 17) % 900) - 400 || 1,
        final,
      };
      // The creation order, for the horizon: a repeat from beyond the window is `stale`.
      const d = {
        owner: `player-${player}`,
        signature: settlement(s),
        deltas: { coins: s.net },
        scope: s.room,
        order: r * 2 + (final ? 1 : 0),
      };
      out.push(d);
      if (out.length % 7 === 0) out.push(d);
    }
  }
  return out;
}

/** A worker's share of the log: its players' deliveries, round-robin. */
function partition(index) {
  const lists = [];
  for (let p = index; p < PLAYERS; p += WORKERS) lists.push(deliveriesOf(p));
  const out = [];
  for (let i = 0; lists.some((l) => i < l.length); i++)
    for (const l of lists) if (i < l.length) out.push(l[i]);
  return out;
}

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

if (process.argv[2] === 'worker') {
  const [index, prefix, life] = [Number(process.argv[3]), process.argv[4], Number(process.argv[5])];
  const client = new Redis(url);
  // 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap.
  const ledger = createLedger({
    store: createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: 0 } }),
    capacity: 4,
  });
  const log = partition(index);
  let offset = Number((await client.get(`${prefix}offset:${index}`)) ?? 0);
  // The first life stops half a checkpoint past a third of its share and waits for its SIGKILL:
  // the deliveries since the checkpoint were applied, and its next life receives them again.
  const killAt = life === 0 ? Math.ceil(log.length / 3 / CHECKPOINT) * CHECKPOINT + CHECKPOINT / 2 : -1;
  const outcomes = {};
  while (offset < log.length) {
    if (offset === killAt) {
      process.send({ waiting: true });
      await new Promise(() => setInterval(() => {}, 1000));
    }
    const { outcome } = await ledger.apply(log[offset]);
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    offset++;
    if (offset % CHECKPOINT === 0) await client.set(`${prefix}offset:${index}`, offset);
  }
  process.send({ done: true, outcomes });
  await client.quit();
} else {
  const prefix = `example-workers:${process.pid}:`;
  const client = new Redis(url);
  const self = new URL(import.meta.url).pathname;
  const kills = [];
  const seen = { applied: 0, duplicate: 0, stale: 0 };

  // Runs worker `index` to the end; its first life is SIGKILLed a third of the way through, and
  // a new process resumes from its last checkpoint.
  const run = (index, life = 0) =>
    new Promise((resolve, reject) => {
      const child = fork(self, ['worker', String(index), prefix, String(life)]);
      child.on('message', (m) => {
        if (m.done) for (const [k, n] of Object.entries(m.outcomes)) seen[k] += n;
        else if (m.waiting) {
          kills.push(index);
          child.kill('SIGKILL');
        }
      });
      child.on('exit', (code, signal) => {
        if (signal === 'SIGKILL') resolve(run(index, life + 1));
        else if (code === 0) resolve();
        else reject(new Error(`worker ${index} exited with ${code}`));
      });
    });

  try {
    await Promise.all(Array.from({ length: WORKERS }, (_, i) => run(i)));
    const ledger = createLedger({ store: createRedisStore({ client, prefix }), capacity: 4 });
    const truth = {};
    for (let p = 0; p < PLAYERS; p++) {
      for (const d of new Map(deliveriesOf(p).map((d) => [d.signature, d])).values()) {
        truth[d.scope] = (truth[d.scope] ?? 0) + d.deltas.coins;
      }
    }
    for (const [room, coins] of Object.entries(truth)) {
      assert.deepEqual(await ledger.totals(room), { coins: BigInt(coins) }, room);
    }
    assert.equal(kills.length, WORKERS);
    console.log(
      `${WORKERS} workers, ${kills.length} SIGKILLed and restarted from their checkpoint: ` +
        `their second lives ${seen.applied} applied, ${seen.duplicate} duplicate, ${seen.stale} stale; ` +
        `${Object.keys(truth).length} rooms exact`,
    );
  } finally {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await client.unlink(...keys);
    } while (cursor !== '0');
    await client.quit();
  }
}
