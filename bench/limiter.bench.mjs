// Limiter take, each algorithm, in memory and on Redis at concurrency 200, next to
// rate-limiter-flexible's RateLimiterMemory and RateLimiterRedis consume (a fixed window: the
// closest thing it has, and what its users run). Also the bytes each algorithm keeps per key on
// Redis (MEMORY USAGE), printed in the workload line.
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import { createLimiter, memoryStore } from '../dist/index.js';
import { createRedisStore } from '../dist/redis/index.js';
import { BareFixedWindow, BareSlidingLog } from './lib/limiter-floors.mjs';
import { unlinkPrefix } from './lib/redis.mjs';
import { rlfTake } from './lib/rlf.mjs';
import { prng } from './lib/workload.mjs';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const KEYS = 5_000;
const HOT = 10; // 10% of requests come from 10 abusive clients: they are refused most of the time
const MEMORY_OPS = 200_000;
const REDIS_OPS = 40_000;
const CONCURRENCY = 200; // a busy service's takes in flight: many decisions per script call on Redis
const LIMIT = 50;
const WINDOW_S = 1;
const ALGORITHMS = ['sliding-log', 'sliding-window', 'fixed-window', 'gcra'];
// Exact algorithms: the Redis target applies to them (sliding-window is an estimate, fixed-window
// exact per aligned window only); the memory target applies to all four.
const EXACT = new Set(['sliding-log', 'gcra']);
const limitOf = (algorithm) => ({
  algorithm,
  limit: LIMIT,
  window: WINDOW_S * 1000,
  ...(algorithm === 'sliding-window' ? { granularity: 100 } : {}),
});

let client;
let rlfClient;
let keys;
let bytes;
const prefix = `bench-limiter:${process.pid}:`;
let runs = 0;

function workload(n) {
  const random = prng(20261202);
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = random() < 0.1 ? `hot-${Math.floor(random() * HOT)}` : `user-${Math.floor(random() * KEYS)}`;
  }
  return out;
}

async function sequential(take, n) {
  let allowed = 0;
  for (let i = 0; i < n; i++) if (await take(keys[i])) allowed++;
  return allowed;
}

// A key never seen before on every take (a flood of client ids, or IPs): every take builds a
// key's state, and a limiter's caches of keys stay full and evict all the time.
let distinctKeys;
async function distinct(take, n) {
  let allowed = 0;
  for (let i = 0; i < n; i++) if (await take(distinctKeys[i])) allowed++;
  return allowed;
}

async function concurrent(take, n) {
  let next = 0;
  let allowed = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) if (await take(keys[next++])) allowed++;
    }),
  );
  return allowed;
}

const ours = (limiter) => async (key) => (await limiter.take(key)).allowed;
const theirs = rlfTake;

// A service's limiter lives as long as the service. The verify pass keeps one limiter of each side
// alive for the whole suite, as a running service would: otherwise the harness's full gc() between
// runs can free the hidden classes of a side's objects once none is left, and every run of that
// side would start from deoptimized code (onceflow pins its own shapes; rate-limiter-flexible does
// not, so without this it would pay a recompilation per run that a real service never pays).
const longLived = [];

/** One untimed pass: both allowed and refused outcomes happen (the hot keys are refused). */
async function verify(make, drive, n, mixed = true) {
  const take = make();
  // A limiter of 200,000 distinct keys is not kept: its heap would slow every later comparison.
  if (mixed) longLived.push(take);
  const allowed = await drive(take, n);
  if (mixed ? allowed === 0 || allowed === n : allowed !== n)
    throw new Error(`allowed ${allowed} of ${n}: not the workload's outcome`);
}

function memorySide(algorithm, drive, mixed = true) {
  const make = () => ours(createLimiter({ store: memoryStore(), ...limitOf(algorithm), blockCache: false }));
  return {
    id: 'onceflow',
    label: `createLimiter({ algorithm: '${algorithm}', limit: ${LIMIT}, window: '1s', blockCache: false }).take(key)`,
    prepare: make,
    run: (take) => drive(take, MEMORY_OPS).then(() => MEMORY_OPS),
    verify: () => verify(make, drive, MEMORY_OPS, mixed),
  };
}

function rlfMemorySide(drive, mixed = true) {
  const make = () => theirs(new RateLimiterMemory({ points: LIMIT, duration: WINDOW_S }));
  return {
    id: 'rlf-memory',
    label: `new RateLimiterMemory({ points: ${LIMIT}, duration: ${WINDOW_S} }).consume(key)`,
    prepare: make,
    run: (take) => drive(take, MEMORY_OPS).then(() => MEMORY_OPS),
    verify: () => verify(make, drive, MEMORY_OPS, mixed),
  };
}

const bareLogSide = {
  id: 'bare-log',
  label:
    'a 30-line sliding log: Map of { times: number[], head }, a decision object per take, Promise.resolve',
  prepare: () => ours(new BareSlidingLog(LIMIT, WINDOW_S * 1000)),
  run: (take) => sequential(take, MEMORY_OPS).then(() => MEMORY_OPS),
  verify: () => verify(() => ours(new BareSlidingLog(LIMIT, WINDOW_S * 1000)), sequential, MEMORY_OPS),
};

const bareSide = {
  id: 'bare',
  label: `a 30-line fixed window: Map of { start, count }, a decision object per take, Promise.resolve`,
  prepare: () => ours(new BareFixedWindow(LIMIT, WINDOW_S * 1000)),
  run: (take) => sequential(take, MEMORY_OPS).then(() => MEMORY_OPS),
  verify: () => verify(() => ours(new BareFixedWindow(LIMIT, WINDOW_S * 1000)), sequential, MEMORY_OPS),
};

function redisSide(algorithm, blockCache) {
  const make = () =>
    ours(
      createLimiter({
        store: createRedisStore({ client, prefix }),
        name: `run${runs++}`,
        ...limitOf(algorithm),
        ...(blockCache ? {} : { blockCache: false }),
      }),
    );
  return {
    id: 'onceflow',
    label: `createLimiter({ store: createRedisStore(...), algorithm: '${algorithm}', limit: ${LIMIT}, window: '1s'${blockCache ? '' : ', blockCache: false'} }).take(key)`,
    prepare: make,
    run: (take) => concurrent(take, REDIS_OPS).then(() => REDIS_OPS),
    verify: () => verify(make, concurrent, REDIS_OPS),
  };
}

function rlfRedisSide() {
  const make = () =>
    theirs(
      new RateLimiterRedis({
        storeClient: rlfClient,
        points: LIMIT,
        duration: WINDOW_S,
        keyPrefix: `${prefix}rlf${runs++}`,
      }),
    );
  return {
    id: 'rlf-redis',
    label: `new RateLimiterRedis({ storeClient, points: ${LIMIT}, duration: ${WINDOW_S} }).consume(key)`,
    prepare: make,
    run: (take) => concurrent(take, REDIS_OPS).then(() => REDIS_OPS),
    verify: () => verify(make, concurrent, REDIS_OPS),
  };
}

/** MEMORY USAGE of every key one subject has, for each algorithm: after 1 request and when full. */
async function measureBytes() {
  const out = {};
  const sizeOf = async (pattern) => {
    let total = 0;
    for (const key of await client.keys(pattern))
      total += Number(await client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    return total;
  };
  for (const algorithm of ALGORITHMS) {
    const name = `bytes-${algorithm}`;
    const limiter = createLimiter({
      store: createRedisStore({ client, prefix }),
      name,
      algorithm,
      limit: 100,
      window: '1m',
      ...(algorithm === 'sliding-window' ? { granularity: '1s' } : {}),
      blockCache: false,
    });
    await limiter.take('k');
    const one = await sizeOf(`${prefix}{|l:${name}:*`);
    for (let i = 0; i < 99; i++) await limiter.take('k');
    out[algorithm] = { one, full: await sizeOf(`${prefix}{|l:${name}:*`) };
  }
  const rlf = new RateLimiterRedis({
    storeClient: client,
    points: 100,
    duration: 60,
    keyPrefix: `${prefix}rlf-bytes`,
  });
  await rlf.consume('k');
  out.rlf = { one: await sizeOf(`${prefix}rlf-bytes*`), full: await sizeOf(`${prefix}rlf-bytes*`) };
  return out;
}

export default {
  name: 'limiter',
  title: `Limiter take per algorithm: memory vs RateLimiterMemory, Redis (concurrency ${CONCURRENCY}) vs RateLimiterRedis`,
  async setup() {
    client = new Redis(URL);
    rlfClient = new Redis(URL);
    keys = workload(MEMORY_OPS);
    distinctKeys = Array.from({ length: MEMORY_OPS }, (_, i) => `client-${i}`);
    bytes = await measureBytes();
    return keys;
  },
  async teardown() {
    await unlinkPrefix(client, prefix);
    client.disconnect();
    rlfClient.disconnect();
  },
  describe: () =>
    `${KEYS.toLocaleString('en')} keys + ${HOT} hot keys taking 10% of requests; limit ${LIMIT} per ${WINDOW_S} s ` +
    `(sliding-window: 100 ms buckets); memory ${MEMORY_OPS.toLocaleString('en')} takes per run, Redis ` +
    `${REDIS_OPS.toLocaleString('en')} takes per run, ${CONCURRENCY} in flight, one local Redis (${URL}); ` +
    `a fresh limiter per run. Redis bytes per key, limit 100 per 1 min (sliding-window: 1 s buckets), ` +
    `MEMORY USAGE after 1 request / after 100: ` +
    Object.entries(bytes)
      .map(([a, b]) => `${a} ${b.one} / ${b.full}`)
      .join(', '),
  comparisons: () => [
    ...ALGORITHMS.map((algorithm) => ({
      name: `memory ${algorithm}, sequential`,
      note: 'one take awaited at a time',
      target: 2,
      sides: [memorySide(algorithm, sequential), rlfMemorySide(sequential)],
    })),
    {
      name: 'floor: a bare fixed window vs RLF, sequential',
      note: 'informative: the target asks 2x of RLF; this is what a limiter with nothing around its window does',
      sides: [bareSide, rlfMemorySide(sequential)],
    },
    {
      name: 'floor: a bare sliding log vs RLF, sequential',
      note: 'informative: the same for an exact log of unit costs, with nothing around it',
      sides: [bareLogSide, rlfMemorySide(sequential)],
    },
    ...ALGORITHMS.map((algorithm) => ({
      name: `memory ${algorithm}, ${CONCURRENCY} in flight`,
      note: `${CONCURRENCY} lanes`,
      target: 2,
      sides: [memorySide(algorithm, concurrent), rlfMemorySide(concurrent)],
    })),
    ...ALGORITHMS.map((algorithm) => ({
      name: `redis ${algorithm}, ${CONCURRENCY} in flight`,
      note: EXACT.has(algorithm) ? 'exact algorithm: target 1.5x' : 'informative (not an exact algorithm)',
      ...(EXACT.has(algorithm) ? { target: 1.5 } : {}),
      sides: [redisSide(algorithm, false), rlfRedisSide()],
    })),
    {
      name: `redis gcra with block cache, ${CONCURRENCY} in flight`,
      note: 'informative: the default block cache answers the hot refused keys locally',
      sides: [redisSide('gcra', true), rlfRedisSide()],
    },
    // Last: its runs leave the most garbage behind (200,000 keys' states per side and run).
    {
      name: 'memory gcra, a new key every take',
      note: `informative: ${MEMORY_OPS.toLocaleString('en')} distinct keys per run, sequential`,
      sides: [memorySide('gcra', distinct, false), rlfMemorySide(distinct, false)],
    },
  ],
};
