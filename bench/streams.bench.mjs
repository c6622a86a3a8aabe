// Consumption of the same N pre-published events (untimed), four ways, on the same Redis:
//   onceflow  exactly-once consumer: the handler's effect is a ledger apply (journal kept), and the
//             apply, the dedup mark and the XACK are one script per batch (DESIGN §3.8);
//   bullmq    a BullMQ Worker draining the same events as jobs added with `jobId` = the event id
//             (its dedup), at the same concurrency;
//   fair floor  a hand-written consumer doing the same durable work as the ledger path and nothing
//             else: 64 entries per XREADGROUP, one script per batch with a FIFO-4 dedup check,
//             HINCRBY, a journal XADD per entry and one XACK (bench/lib/streams-floor.mjs);
//   floor     a bare XREADGROUP COUNT n + XACK loop with no effect at all.
// One event in 20 is published twice in a row (a producer's retry): every side must book it once.
// Each timed run consumes all N events with a fresh consumer group (and a fresh ledger, a fresh
// queue): what is timed is the draining only, never the publishing.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { jsonSerializer } from '../dist/idempotency/serializer.js';
import { createLedger } from '../dist/index.js';
import { createRedisStore } from '../dist/redis/index.js';
import { unlinkPrefix } from './lib/redis.mjs';
import {
  expectedBooking,
  FLOOR_BATCH,
  FLOOR_SCRIPT,
  floorConsume,
  floorKeys,
  readGroup,
} from './lib/streams-floor.mjs';
import { prng } from './lib/workload.mjs';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// 20,000 events: enough that one run lasts well past timer and GC noise
// (~1 s at the floor's rate) and small enough that 3 sides x 7 runs stay within the suite's
// 10-minute budget in run.mjs.
const EVENTS = 20_000;
const PLAYERS = 2_000;
// One event in 20 published again right after itself: within the owner's window of 4 on every
// side (expectedBooking checks it), so each side answers it as a duplicate.
const REPEAT_EVERY = 20;
// The same for every side: handlers (or reads) in flight at once. 16 keeps 2 cores busy without
// measuring only how deep a queue of waiting promises can get.
const CONCURRENCY = 16;
// Entries per XREADGROUP of the floor: a consumer loop reads in batches, as onceflow's consumer does.
const BATCH = 100;

const prefix = `bench-streams:${process.pid}:`;
const stream = `${prefix}{s}events`;
let client;
let runs = 0;
// The stream's entries in order (repeats included), and what a FIFO-4 dedup books of them.
let events;
let expected;

function buildEvents() {
  const random = prng(19);
  const out = [];
  for (let i = 0; i < EVENTS; i++) {
    const e = {
      id: `ev-${i}`,
      player: `player-${Math.floor(random() * PLAYERS)}`,
      net: Math.floor(random() * 2001) - 1000,
    };
    out.push(e);
    if (i % REPEAT_EVERY === REPEAT_EVERY - 1) out.push(e);
  }
  return out;
}

async function newGroup(tag) {
  const group = `${tag}${runs++}`;
  await client.call('XGROUP', 'CREATE', stream, group, '0');
  return group;
}

async function groupDone(group) {
  const [count] = await client.call('XPENDING', stream, group);
  const info = await client.call('XINFO', 'GROUPS', stream);
  const g = info.map((flat) => Object.fromEntries(flat.flatMap((v, i) => (i % 2 ? [] : [[v, flat[i + 1]]]))));
  const mine = g.find((x) => x.name === group);
  if (Number(count) !== 0 || Number(mine?.lag) !== 0) {
    throw new Error(`group ${group}: ${count} pending, lag ${mine?.lag} after the run`);
  }
}

// The onceflow side: every entry is booked by stream-apply-ack.lua (the fence, the ledger apply
// and the XACK in one script); `applied` reports each entry answered (booked or duplicate).
async function onceflowConsume({ group, name, total }, outcomes = {}) {
  const { createStreamConsumer } = await import('../dist/streams/index.js');
  const ac = new AbortController();
  let answered = 0;
  const consumer = createStreamConsumer({
    client,
    stream,
    group,
    consumer: 'bench',
    concurrency: CONCURRENCY,
    block: '100ms',
    ledger: {
      prefix: ledgerPrefix,
      name,
      capacity: 4,
      entry: (d) => ({ owner: d.event.player, signature: d.eventId, deltas: { coins: BigInt(d.event.net) } }),
    },
    observer: (e) => {
      if (e.type !== 'applied') return;
      outcomes[e.outcome] = (outcomes[e.outcome] ?? 0) + 1;
      if (++answered === total) ac.abort();
    },
    signal: ac.signal,
  });
  await consumer.run();
  return answered;
}

const ledgerPrefix = `${prefix}ledger:`;

async function onceflowPrepare() {
  const name = `of${runs}`;
  const ledger = createLedger({
    store: createRedisStore({ client, prefix: ledgerPrefix }),
    capacity: 4,
    name,
  });
  return { group: await newGroup('onceflow'), ledger, name };
}

const onceflowSide = {
  id: 'onceflow',
  label:
    'createStreamConsumer({ ledger, concurrency: 16 }): ledger apply (journal kept) + dedup mark + XACK, one script per batch',
  prepare: onceflowPrepare,
  // Ops are the workload's events on every side (a repeat is part of draining them, as BullMQ's
  // dropped add is part of its jobs): each run drains all of them, so the ratios are of drain times.
  run: async ({ group, name }) => {
    await onceflowConsume({ group, name, total: events.length });
    return EVENTS;
  },
  dispose: ({ group }) => client.call('XGROUP', 'DESTROY', stream, group),
  async verify() {
    const { group, ledger, name } = await onceflowPrepare();
    const outcomes = {};
    const n = await onceflowConsume({ group, name, total: events.length }, outcomes);
    if (n !== events.length) throw new Error(`onceflow acked ${n} of ${events.length}`);
    if (outcomes.applied !== expected.booked || outcomes.duplicate !== events.length - expected.booked) {
      throw new Error(`onceflow answered ${JSON.stringify(outcomes)}, expected ${expected.booked} applied`);
    }
    await groupDone(group);
    for (const [player, sum] of expected.balances) {
      const b = await ledger.balances(player);
      if ((b.coins ?? 0n) !== sum) throw new Error(`${player}: coins ${b.coins}, expected ${sum}`);
    }
    await client.call('XGROUP', 'DESTROY', stream, group);
  },
};

// The fair floor (bench/lib/streams-floor.mjs): fresh owner keys per run.
let floorSha;
const fairFloorSide = {
  id: 'fair floor',
  label: `hand-written: XREADGROUP COUNT ${FLOOR_BATCH} + one script per batch (FIFO-4 dedup, HINCRBY, journal XADD per entry, one XACK)`,
  prepare: async () => ({ group: await newGroup('fair'), keys: `${prefix}fair${runs}:` }),
  run: async ({ group, keys }) => {
    await floorConsume(client, floorSha, stream, group, keys);
    return EVENTS;
  },
  dispose: async ({ group, keys }) => {
    await client.call('XGROUP', 'DESTROY', stream, group);
    await unlinkPrefix(client, keys);
  },
  async verify() {
    const state = await fairFloorSide.prepare();
    const { acked, booked } = await floorConsume(client, floorSha, stream, state.group, state.keys);
    if (acked !== events.length || booked !== expected.booked) {
      throw new Error(
        `fair floor acked ${acked}, booked ${booked}; expected ${events.length}, ${expected.booked}`,
      );
    }
    await groupDone(state.group);
    for (const [player, sum] of expected.balances) {
      const [owner, journal] = floorKeys(state.keys, player);
      const b = BigInt((await client.call('HGET', owner, 'b')) ?? 0);
      if (b !== sum) throw new Error(`fair floor ${player}: ${b}, expected ${sum}`);
      if ((await client.call('XLEN', journal)) === 0) throw new Error(`fair floor ${player}: no journal`);
    }
    await fairFloorSide.dispose(state);
  },
};

// The floor: CONCURRENCY loops, each its own consumer of the group, reading BATCH entries and
// acknowledging them in one XACK, until the group has nothing new.
async function bareConsume(group) {
  let total = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, lane) => {
      for (;;) {
        const entries = await readGroup(client, stream, group, `c${lane}`, BATCH);
        if (entries.length === 0) return;
        await client.call('XACK', stream, group, ...entries.map((e) => e[0]));
        total += entries.length;
      }
    }),
  );
  return total;
}

const floorSide = {
  id: 'floor',
  label: `XREADGROUP COUNT ${BATCH} + XACK, ${CONCURRENCY} loops, no effect`,
  prepare: () => newGroup('floor'),
  run: async (group) => {
    await bareConsume(group);
    return EVENTS;
  },
  dispose: (group) => client.call('XGROUP', 'DESTROY', stream, group),
  async verify() {
    const group = await newGroup('floor');
    const n = await bareConsume(group);
    if (n !== events.length) throw new Error(`floor consumed ${n} of ${events.length}`);
    await groupDone(group);
    await client.call('XGROUP', 'DESTROY', stream, group);
  },
};

// BullMQ: the same events as jobs, jobId = the event id (a repeated add is dropped by BullMQ),
// removed on completion (its cheapest setting: no completed set to grow). The processor's effect
// is an in-memory balance, so the figure is BullMQ's own cost, not a store's.
const bullConnection = () => {
  const u = new globalThis.URL(URL);
  return { host: u.hostname, port: Number(u.port || 6379), maxRetriesPerRequest: null };
};

async function bullPrepare() {
  const name = `q${runs++}`;
  const queue = new Queue(name, { connection: bullConnection(), prefix: `${prefix}bull` });
  for (let i = 0; i < events.length; i += 1000) {
    await queue.addBulk(
      events.slice(i, i + 1000).map((e) => ({
        name: 'settle',
        data: e,
        opts: { jobId: e.id, removeOnComplete: true, removeOnFail: true },
      })),
    );
  }
  const balances = new Map();
  const worker = new Worker(
    name,
    async (job) => {
      const { player, net } = job.data;
      balances.set(player, (balances.get(player) ?? 0) + net);
    },
    { connection: bullConnection(), prefix: `${prefix}bull`, concurrency: CONCURRENCY, autorun: false },
  );
  await worker.waitUntilReady();
  return { queue, worker, balances };
}

function bullDrain({ worker }) {
  return new Promise((resolve, reject) => {
    let done = 0;
    worker.on('completed', () => {
      if (++done === expected.booked) resolve(EVENTS);
    });
    worker.on('failed', (_job, err) => reject(err));
    worker.run().catch(reject);
  });
}

async function bullDispose({ queue, worker }) {
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
}

const bullSide = {
  id: 'bullmq',
  label: `new Worker(queue, processor, { concurrency: ${CONCURRENCY} }) draining jobs added with jobId = event id`,
  prepare: bullPrepare,
  run: bullDrain,
  dispose: bullDispose,
  async verify() {
    const state = await bullPrepare();
    // A second add of the same jobIds is dropped: BullMQ's dedup, the thing it is measured with.
    await state.queue.addBulk(
      events.slice(0, 100).map((e) => ({ name: 'settle', data: e, opts: { jobId: e.id } })),
    );
    const waiting = await state.queue.getWaitingCount();
    if (waiting !== expected.booked) {
      throw new Error(`bullmq holds ${waiting} jobs, expected ${expected.booked} (jobId dedup)`);
    }
    await bullDrain(state);
    for (const [player, sum] of expected.balances) {
      const got = BigInt(state.balances.get(player) ?? 0);
      if (got !== sum) throw new Error(`bullmq ${player}: ${got}, expected ${sum}`);
    }
    await bullDispose(state);
  },
};

// Until the consumer is built (dist/streams), the two onceflow comparisons cannot run; the
// BullMQ-next-to-floor figure still tells how far apart the two baselines are.
const haveConsumer = await import('../dist/streams/index.js').then(
  (m) => typeof m.createStreamConsumer === 'function',
  () => false,
);

export default {
  name: 'streams',
  title: `Stream consumption of ${EVENTS.toLocaleString('en')} events (concurrency ${CONCURRENCY}): onceflow vs BullMQ vs a fair floor vs a bare XREADGROUP + XACK`,
  async setup() {
    client = new Redis(URL);
    events = buildEvents();
    expected = expectedBooking(events);
    // Every repeat must be a duplicate for a FIFO-4 window too, or the sides would disagree.
    if (expected.booked !== EVENTS) throw new Error(`the workload books ${expected.booked} of ${EVENTS}`);
    floorSha = await client.script('LOAD', FLOOR_SCRIPT);
    // Published once, untimed, pipelined: every side's run reads this same stream from 0.
    const pipeline = client.pipeline();
    for (const e of events) pipeline.xadd(stream, '*', 'e', jsonSerializer.serialize(e), 'i', e.id);
    await pipeline.exec();
    if (!haveConsumer) {
      process.stderr.write(
        'streams bench: dist/streams has no createStreamConsumer yet: onceflow sides skipped\n',
      );
    }
    return events;
  },
  async teardown() {
    await unlinkPrefix(client, prefix);
    client.disconnect();
  },
  describe: () =>
    `${EVENTS.toLocaleString('en')} events (+1 in ${REPEAT_EVERY} published twice: ${events.length.toLocaleString('en')} entries) for ${PLAYERS.toLocaleString('en')} players, pre-published to one stream ` +
    `(untimed); each run drains all of them with a fresh group / queue; one local Redis (${URL})`,
  comparisons: () => [
    ...(haveConsumer
      ? [
          { name: 'vs BullMQ Worker (jobId dedup)', target: 2, sides: [onceflowSide, bullSide] },
          {
            name: 'vs the fair floor (same durable work, hand-written)',
            note: 'no fence, replay marks, horizon or options: the cost of the durable work alone',
            target: 0.6,
            sides: [onceflowSide, fairFloorSide],
          },
          {
            name: 'vs bare XREADGROUP + XACK (the floor)',
            note: 'the floor has no effect and no dedup',
            target: 0.5,
            sides: [onceflowSide, floorSide],
          },
        ]
      : []),
    {
      name: 'BullMQ Worker next to the floor',
      note: 'the two baselines alone: sides[0] is BullMQ here, not onceflow',
      sides: [bullSide, floorSide],
    },
  ],
};
