// Consumption of the same N pre-published events (untimed), three ways, on the same Redis:
//   onceflow  exactly-once consumer: the handler's effect is a ledger apply, and the apply, the
//             dedup mark and the XACK are one script per entry (DESIGN §3.8);
//   bullmq    a BullMQ Worker draining the same events as jobs added with `jobId` = the event id
//             (its dedup), at the same concurrency;
//   floor     a bare XREADGROUP COUNT n + XACK loop with no effect at all.
// Each timed run consumes all N events with a fresh consumer group (and a fresh ledger, a fresh
// queue): what is timed is the draining only, never the publishing.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { jsonSerializer } from '../dist/idempotency/serializer.js';
import { createLedger } from '../dist/index.js';
import { createRedisStore } from '../dist/redis/index.js';
import { unlinkPrefix } from './lib/redis.mjs';
import { prng } from './lib/workload.mjs';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// 20,000 events: enough that one run lasts well past timer and GC noise
// (~1 s at the floor's rate) and small enough that 3 sides x 7 runs stay within the suite's
// 10-minute budget in run.mjs.
const EVENTS = 20_000;
const PLAYERS = 2_000;
// The same for every side: handlers (or reads) in flight at once. 16 keeps 2 cores busy without
// measuring only how deep a queue of waiting promises can get.
const CONCURRENCY = 16;
// Entries per XREADGROUP of the floor: a consumer loop reads in batches, as onceflow's consumer does.
const BATCH = 100;

const prefix = `bench-streams:${process.pid}:`;
const stream = `${prefix}{s}events`;
let client;
let runs = 0;
let events;

function buildEvents() {
  const random = prng(19);
  return Array.from({ length: EVENTS }, (_, i) => ({
    id: `ev-${i}`,
    player: `player-${Math.floor(random() * PLAYERS)}`,
    net: Math.floor(random() * 2001) - 1000,
  }));
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
async function onceflowConsume({ group, name, total }) {
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
      journal: { maxEntriesPerOwner: 0 },
      entry: (d) => ({ owner: d.event.player, signature: d.eventId, deltas: { coins: BigInt(d.event.net) } }),
    },
    onEvent: (e) => {
      if (e.type === 'applied' && ++answered === total) ac.abort();
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
    store: createRedisStore({ client, prefix: ledgerPrefix, journal: { maxEntriesPerOwner: 0 } }),
    capacity: 4,
    name,
  });
  return { group: await newGroup('onceflow'), ledger, name };
}

const onceflowSide = {
  id: 'onceflow',
  label: 'createStreamConsumer({ ledger, concurrency: 16 }): ledger apply + dedup mark + XACK in one script',
  prepare: onceflowPrepare,
  run: ({ group, name }) => onceflowConsume({ group, name, total: EVENTS }),
  dispose: ({ group }) => client.call('XGROUP', 'DESTROY', stream, group),
  async verify() {
    const { group, ledger, name } = await onceflowPrepare();
    const n = await onceflowConsume({ group, name, total: EVENTS });
    if (n !== EVENTS) throw new Error(`onceflow acked ${n} of ${EVENTS}`);
    await groupDone(group);
    const expected = new Map();
    for (const e of events) expected.set(e.player, (expected.get(e.player) ?? 0n) + BigInt(e.net));
    for (const [player, sum] of [...expected].slice(0, 50)) {
      const b = await ledger.balances(player);
      if ((b.coins ?? 0n) !== sum) throw new Error(`${player}: coins ${b.coins}, expected ${sum}`);
    }
    await client.call('XGROUP', 'DESTROY', stream, group);
  },
};

// The floor: CONCURRENCY loops, each its own consumer of the group, reading BATCH entries and
// acknowledging them in one XACK, until the group has nothing new.
async function floorConsume(group) {
  let total = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, lane) => {
      for (;;) {
        const reply = await client.call(
          'XREADGROUP',
          'GROUP',
          group,
          `c${lane}`,
          'COUNT',
          BATCH,
          'STREAMS',
          stream,
          '>',
        );
        const entries = reply?.[0]?.[1] ?? [];
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
  run: floorConsume,
  dispose: (group) => client.call('XGROUP', 'DESTROY', stream, group),
  async verify() {
    const group = await newGroup('floor');
    const n = await floorConsume(group);
    if (n !== EVENTS) throw new Error(`floor consumed ${n} of ${EVENTS}`);
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
      if (++done === EVENTS) resolve(done);
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
    if (waiting !== EVENTS) throw new Error(`bullmq holds ${waiting} jobs, expected ${EVENTS} (jobId dedup)`);
    const n = await bullDrain(state);
    if (n !== EVENTS) throw new Error(`bullmq completed ${n} of ${EVENTS}`);
    let sum = 0;
    for (const v of state.balances.values()) sum += v;
    const expected = events.reduce((a, e) => a + e.net, 0);
    if (sum !== expected) throw new Error(`bullmq balances sum ${sum}, expected ${expected}`);
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
  title: `Stream consumption of ${EVENTS.toLocaleString('en')} events (concurrency ${CONCURRENCY}): onceflow vs BullMQ vs a bare XREADGROUP + XACK`,
  async setup() {
    client = new Redis(URL);
    events = buildEvents();
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
    `${EVENTS.toLocaleString('en')} events for ${PLAYERS.toLocaleString('en')} players, pre-published to one stream ` +
    `(untimed); each run drains all of them with a fresh group / queue; one local Redis (${URL})`,
  comparisons: () => [
    ...(haveConsumer
      ? [
          { name: 'vs BullMQ Worker (jobId dedup)', target: 2, sides: [onceflowSide, bullSide] },
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
