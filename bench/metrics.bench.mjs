// What onceflow/metrics costs (docs/metrics.md): ledger apply and limiter take with createMetrics
// attached (its observer on the part, its observeStore around the store: every call counted and
// timed into prom-client) next to the same with nothing attached, on the memory store (one awaited
// call at a time) and on Redis (200 in flight, as bench/redis-ledger.bench.mjs). Targets: at most
// 5% slower on memory (>= 0.95x), at most 2% on Redis (>= 0.98x). Then the scrape: one
// `registry.metrics()` over ~10,000 live series, timed next to a fresh createMetrics' registry.
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { createLedger, createLimiter, defineSignature, memoryStore } from '../dist/index.js';
import { createMetrics } from '../dist/metrics/index.js';
import { createRedisStore } from '../dist/redis/index.js';
import { unlinkPrefix } from './lib/redis.mjs';
import {
  checkOutcomes,
  playerLanes,
  prng,
  registerRooms,
  runLanes,
  settlementEntry,
  settlementStream,
} from './lib/workload.mjs';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const MEMORY_PLAYERS = 10_000;
const MEMORY_ROUNDS = 8; // ≈ 195 000 deliveries, as the ledger and observer suites
const REDIS_PLAYERS = 2_000;
const REDIS_ROUNDS = 6; // ≈ 29 000 deliveries, as the redis-ledger suite
const DUP_RATE = 0.22;
const MEMORY_TAKES = 200_000;
const REDIS_TAKES = 40_000; // as the limiter suite's Redis rows
const KEYS = 5_000;
// Far above any key's takes in a run (~40 per key): every take is allowed, so both sides do the
// same work (verified below).
const LIMIT = 1_000_000;
// 200 calls in flight (a busy service's concurrency), as the redis-ledger and limiter suites.
const CONCURRENCY = 200;
// The scrape: each configured name brings 10 ledger + 11 limiter + 7 idempotency + 4 gate counter
// series (every outcome zeroed on first sight), so 300 names of each kind are 9,600 series, and 3
// store kinds x 20 operations x 21 histogram lines (18 buckets, +Inf, sum, count) 1,260 more. The
// default label cap (100 names per label) would fold names 101..300 into `other`: the scrape
// registry raises it to 300 so the series are live, distinct ones.
const SCRAPE_NAMES = 300;
const SCRAPE_CAP = 300;
const SCRAPES = 20; // per timed run: ~0.4 s at the ~15-20 ms a 10,000-series scrape takes here
const STORE_KINDS = ['memory', 'redis', 'postgres'];
// The Store contract's operations (src/store/observe-store.ts).
const STORE_OPS = (
  'ledgerApply ledgerResolve ledgerBalances ledgerWindow ledgerJournal ledgerScopeTotals limiterTake ' +
  'limiterReset limiterDelete close checkpointSave checkpointLoad versionUpsert versionGet ' +
  'timestampAdvance leaseRenew idempotencyBegin idempotencyRenew idempotencyComplete idempotencyRelease'
).split(' ');

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

let client;
let memoryStream;
let redisStream;
let lanes;
let memoryKeys;
let redisKeys;
// One createMetrics for the whole suite, as a service has one: its series exist after the first
// run, so the timed runs measure the steady state (a cached child per label set), not the first
// sight of a name.
let metrics;
let scrapeRegistry;
let scrapeInfo;
const prefix = `bench-metrics:${process.pid}:`;
let runs = 0;

const memoryLedger = (attached) => () =>
  createLedger({
    store: attached ? metrics.observeStore(memoryStore()) : memoryStore(),
    capacity: 4,
    name: 'bench',
    ...(attached ? { observer: metrics.observer } : {}),
  });
const memoryLimiter = (attached) => () =>
  createLimiter({
    store: attached ? metrics.observeStore(memoryStore()) : memoryStore(),
    name: 'bench',
    algorithm: 'gcra',
    limit: LIMIT,
    window: 1000,
    ...(attached ? { observer: metrics.observer } : {}),
  });
// A fresh key prefix per run (fresh state), one ledger or limiter name (a constant label set).
const redisStoreOf = (attached) => {
  const store = createRedisStore({
    client,
    prefix: `${prefix}run${runs++}:`,
    journal: { maxEntriesPerOwner: 0 },
  });
  return attached ? metrics.observeStore(store) : store;
};
// 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap (DESIGN §3.2).
const redisLedger = (attached) => async () => {
  const ledger = createLedger({
    store: redisStoreOf(attached),
    capacity: 4,
    name: 'bench',
    ...(attached ? { observer: metrics.observer } : {}),
  });
  await registerRooms(ledger, redisStream); // untimed
  return ledger;
};
const redisLimiter = (attached) => () =>
  createLimiter({
    store: redisStoreOf(attached),
    name: 'bench',
    algorithm: 'gcra',
    limit: LIMIT,
    window: 1000,
    blockCache: false,
    ...(attached ? { observer: metrics.observer } : {}),
  });

// One loop per side: a call site shared by both sides' objects would be polymorphic and slow both.
async function applyAttached(ledger) {
  const { length, owners, signatures, nets, rooms } = memoryStream;
  for (let i = 0; i < length; i++) {
    await ledger.apply({
      owner: owners[i],
      signature: signatures[i],
      deltas: { coins: nets[i] },
      scope: rooms[i],
    });
  }
  return length;
}
async function applyBare(ledger) {
  const { length, owners, signatures, nets, rooms } = memoryStream;
  for (let i = 0; i < length; i++) {
    await ledger.apply({
      owner: owners[i],
      signature: signatures[i],
      deltas: { coins: nets[i] },
      scope: rooms[i],
    });
  }
  return length;
}
async function takeAttached(limiter) {
  for (let i = 0; i < MEMORY_TAKES; i++) await limiter.take(memoryKeys[i]);
  return MEMORY_TAKES;
}
async function takeBare(limiter) {
  for (let i = 0; i < MEMORY_TAKES; i++) await limiter.take(memoryKeys[i]);
  return MEMORY_TAKES;
}
async function redisApply(ledger) {
  await runLanes(lanes, (i) => ledger.apply(settlementEntry(redisStream, i)));
  return redisStream.length;
}
async function redisTake(limiter) {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REDIS_TAKES) await limiter.take(redisKeys[next++]);
    }),
  );
  return REDIS_TAKES;
}

/** The counter of `name` with `labels`, read from the suite's registry (0 when absent). */
async function count(name, labels) {
  const metric = metrics.registry.getSingleMetric(`onceflow_${name}`);
  const { values } = await metric.get();
  const match = values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x));
  return match.reduce((sum, v) => sum + v.value, 0);
}

async function verifyLedger(make, stream, drive, attached) {
  const ledger = await make();
  const before = await count('ledger_applies_total', { ledger: 'bench' });
  const counts = { applied: 0, duplicate: 0, stale: 0 };
  await drive(stream, async (i) => {
    counts[(await ledger.apply(settlementEntry(stream, i))).outcome]++;
  });
  checkOutcomes(stream, counts);
  const counted = (await count('ledger_applies_total', { ledger: 'bench' })) - before;
  if (attached && counted !== stream.length)
    throw new Error(`${counted} applies counted of ${stream.length}`);
}
const sequential = async (stream, step) => {
  for (let i = 0; i < stream.length; i++) await step(i);
};
const laned = (_stream, step) => runLanes(lanes, step);

async function verifyLimiter(make, keys, n, attached) {
  const limiter = await make();
  const before = await count('limiter_decisions_total', { limiter: 'bench', reason: 'allowed' });
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) {
        const i = next++;
        if (!(await limiter.take(keys[i])).allowed) throw new Error(`take ${i} refused`);
      }
    }),
  );
  const counted = (await count('limiter_decisions_total', { limiter: 'bench', reason: 'allowed' })) - before;
  if (attached && counted !== n) throw new Error(`${counted} decisions counted of ${n}`);
}

const side = (id, label, prepare, run, verify) => ({ id, label, prepare, run, verify });
const attachedLabel = (what) =>
  `${what} with metrics = createMetrics({ registry }): observer: metrics.observer, store: metrics.observeStore(store)`;

/** A registry of ~10,000 live series, fed the events a deployment of many names would send. */
function bigRegistry() {
  const big = createMetrics({ registry: new Registry(), maxLabelValues: SCRAPE_CAP });
  const emit = big.observer;
  for (let n = 0; n < SCRAPE_NAMES; n++) {
    emit({ part: 'ledger', type: 'apply', ledger: `ledger-${n}`, outcome: 'applied', owner: 'o' });
    emit({ part: 'limiter', type: 'decision', limiter: `limiter-${n}`, allowed: true, reason: 'allowed' });
    emit({
      part: 'idempotency',
      type: 'run',
      scope: `scope-${n}`,
      outcome: 'executed',
      takeover: false,
      key: 'k',
    });
    emit({ part: 'version-gate', type: 'upsert', gate: `gate-${n}`, outcome: 'applied' });
  }
  for (const store of STORE_KINDS) {
    for (const operation of STORE_OPS) {
      emit({ part: 'store', type: 'call', store, operation, durationMs: 0.05 });
    }
  }
  return big.registry;
}

const seriesOf = (text) => text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;

async function scrapeRun(registry) {
  let bytes = 0;
  for (let i = 0; i < SCRAPES; i++) bytes += (await registry.metrics()).length;
  if (bytes === 0) throw new Error('empty scrape');
  return SCRAPES;
}

export default {
  name: 'metrics',
  title:
    'onceflow/metrics attached vs not: ledger apply and limiter take, memory and Redis; /metrics scrape cost',
  async setup() {
    client = new Redis(URL);
    metrics = createMetrics({ registry: new Registry() });
    memoryStream = settlementStream({
      sign: settlement,
      players: MEMORY_PLAYERS,
      rounds: MEMORY_ROUNDS,
      dupRate: DUP_RATE,
    });
    redisStream = settlementStream({
      sign: settlement,
      players: REDIS_PLAYERS,
      rounds: REDIS_ROUNDS,
      dupRate: DUP_RATE,
    });
    lanes = playerLanes(redisStream, CONCURRENCY);
    const random = prng(20261206);
    memoryKeys = Array.from({ length: MEMORY_TAKES }, () => `user-${Math.floor(random() * KEYS)}`);
    redisKeys = memoryKeys.slice(0, REDIS_TAKES);
    scrapeRegistry = bigRegistry();
    // A few untimed scrapes for the description line (the timed ones are the comparison's rows).
    const text = await scrapeRegistry.metrics();
    const times = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await scrapeRegistry.metrics();
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    scrapeInfo = { series: seriesOf(text), bytes: text.length, ms: times[2] };
    return memoryStream;
  },
  async teardown() {
    await unlinkPrefix(client, prefix);
    client.disconnect();
  },
  describe: () =>
    `memory: ${memoryStream.length.toLocaleString('en')} ledger deliveries, ${MEMORY_TAKES.toLocaleString('en')} takes ` +
    `over ${KEYS.toLocaleString('en')} keys, one awaited call at a time; Redis (${URL}): ` +
    `${redisStream.length.toLocaleString('en')} deliveries in ${CONCURRENCY} lanes by player, ` +
    `${REDIS_TAKES.toLocaleString('en')} takes ${CONCURRENCY} in flight; scrape: ` +
    `${scrapeInfo.series.toLocaleString('en')} series (maxLabelValues ${SCRAPE_CAP}), ` +
    `${(scrapeInfo.bytes / 1024).toFixed(0)} KiB, ${scrapeInfo.ms.toFixed(1)} ms per registry.metrics() (median of 5, setup)`,
  comparisons: () => [
    {
      name: 'memory ledger apply: metrics vs none',
      note: 'target: at most 5% slower',
      target: 0.95,
      sides: [
        side(
          'metrics',
          attachedLabel("createLedger({ store: memoryStore(), capacity: 4, name: 'bench' }).apply(...)"),
          memoryLedger(true),
          applyAttached,
          () => verifyLedger(memoryLedger(true), memoryStream, sequential, true),
        ),
        side(
          'none',
          "createLedger({ store: memoryStore(), capacity: 4, name: 'bench' }).apply(...)",
          memoryLedger(false),
          applyBare,
          () => verifyLedger(memoryLedger(false), memoryStream, sequential, false),
        ),
      ],
    },
    {
      name: 'memory limiter take: metrics vs none',
      note: 'target: at most 5% slower',
      target: 0.95,
      sides: [
        side(
          'metrics',
          attachedLabel(
            "createLimiter({ store: memoryStore(), algorithm: 'gcra', limit: 1e6, window: 1000 }).take(key)",
          ),
          memoryLimiter(true),
          takeAttached,
          () => verifyLimiter(memoryLimiter(true), memoryKeys, MEMORY_TAKES, true),
        ),
        side(
          'none',
          "createLimiter({ store: memoryStore(), algorithm: 'gcra', limit: 1e6, window: 1000 }).take(key)",
          memoryLimiter(false),
          takeBare,
          () => verifyLimiter(memoryLimiter(false), memoryKeys, MEMORY_TAKES, false),
        ),
      ],
    },
    {
      name: `redis ledger apply (${CONCURRENCY} lanes): metrics vs none`,
      note: 'target: at most 2% slower',
      target: 0.98,
      sides: [
        side(
          'metrics',
          attachedLabel(
            "createLedger({ store: createRedisStore(...), capacity: 4, name: 'bench' }).apply(...)",
          ),
          redisLedger(true),
          redisApply,
          () => verifyLedger(redisLedger(true), redisStream, laned, true),
        ),
        side(
          'none',
          "createLedger({ store: createRedisStore(...), capacity: 4, name: 'bench' }).apply(...)",
          redisLedger(false),
          redisApply,
          () => verifyLedger(redisLedger(false), redisStream, laned, false),
        ),
      ],
    },
    {
      name: `redis limiter take (${CONCURRENCY} in flight): metrics vs none`,
      note: 'target: at most 2% slower',
      target: 0.98,
      sides: [
        side(
          'metrics',
          attachedLabel(
            "createLimiter({ store: createRedisStore(...), algorithm: 'gcra', limit: 1e6, window: 1000, blockCache: false }).take(key)",
          ),
          redisLimiter(true),
          redisTake,
          () => verifyLimiter(redisLimiter(true), redisKeys, REDIS_TAKES, true),
        ),
        side(
          'none',
          "createLimiter({ store: createRedisStore(...), algorithm: 'gcra', limit: 1e6, window: 1000, blockCache: false }).take(key)",
          redisLimiter(false),
          redisTake,
          () => verifyLimiter(redisLimiter(false), redisKeys, REDIS_TAKES, false),
        ),
      ],
    },
    {
      name: 'scrape: registry.metrics(), ~10,000 series vs a fresh createMetrics',
      note: `informative: ops = scrapes (${SCRAPES} per run); 1000 / ops/s = ms per scrape`,
      sides: [
        side(
          '10k-series',
          `await registry.metrics() over ${SCRAPE_NAMES} names each of ledger, limiter, idempotency scope, gate + 60 store histograms`,
          () => scrapeRegistry,
          scrapeRun,
        ),
        side(
          'fresh',
          'await registry.metrics() of createMetrics({ registry: new Registry() }) before any event',
          () => createMetrics({ registry: new Registry() }).registry,
          scrapeRun,
        ),
      ],
    },
  ],
};
