#!/usr/bin/env node
// Two builds of the memory limiter in one process, next to RateLimiterMemory: each round runs
// every side once over the limiter bench's workload (200,000 takes, 5,010 keys, 10 hot, one take
// awaited at a time, a fresh limiter per run), the order flipped each round; prints each side's
// median ns per take and the median of its per-round ratio to RateLimiterMemory. Within one round
// the sides share the machine's state, so the ratios hold up where separate runs swing by 2x.
// A build is a copy of `dist/`, e.g. the one before a change:
//   git stash && npm run build && cp -r dist /tmp/before && git stash pop && npm run build
// With --floors, the bare limiters of bench/lib/limiter-floors.mjs run beside them (a fixed window;
// the same behind a store's layout; a sliding log; a ring log): what the 2x target asks.
// With --lockstep, each round's sides take the same keys together, 500 at a time, the order flipped
// every 500: a change of the machine's load within a round then falls on every side alike (on a
// loaded machine, whole runs one after the other swing by 1.5x between rounds; 500-take slices
// taken in turn agree within a few percent). It prints the median ns of a slice and the median
// per-slice ratio. The sides share one heap, so a side's garbage is collected in any side's slice:
// it compares the work of a take, not its share of the collector.
// Usage: node --expose-gc scripts/limiter-memory-ab.mjs <dist> [<dist> ...] [--algorithms=a,b] [--rounds=15] [--floors] [--lockstep]
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import {
  BareFixedWindow,
  BareRingLog,
  BareSlidingLog,
  BareStoreShapedWindow,
} from '../bench/lib/limiter-floors.mjs';
import { rlfTake } from '../bench/lib/rlf.mjs';
import { prng } from '../bench/lib/workload.mjs';

// The limiter bench's memory run (bench/limiter.bench.mjs MEMORY_OPS): ~36 takes per key, so hot
// keys get refused and the sweep runs, as there.
const N = 200_000;
// Rounds left out before measuring: V8 settles its optimised code for these loops within 2-3 runs
// of every side (the bench's --warmup=2, plus one for the extra side).
const WARMUP = 3;
const args = process.argv.slice(2);
const option = (name, fallback) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const dists = args.filter((a) => !a.startsWith('--'));
const algorithms = option('algorithms', 'sliding-log,sliding-window,fixed-window,gcra').split(',');
const rounds = Number(option('rounds', '15'));
const lockstep = args.includes('--lockstep');
// Takes per lockstep slice: ~0.5 ms of work, long enough for the clock, short against load changes.
const SLICE = 500;
if (
  dists.length === 0 ||
  !Number.isSafeInteger(rounds) ||
  rounds < 1 ||
  typeof globalThis.gc !== 'function'
) {
  console.error(
    'usage: node --expose-gc scripts/limiter-memory-ab.mjs <dist> [<dist> ...] [--algorithms=a,b] [--rounds=15] [--floors] [--lockstep]',
  );
  process.exit(2);
}
const builds = await Promise.all(dists.map((d) => import(pathToFileURL(resolve(d, 'index.js')).href)));
const random = prng(20261202);
const keys = Array.from({ length: N }, () =>
  random() < 0.1 ? `hot-${Math.floor(random() * 10)}` : `user-${Math.floor(random() * 5000)}`,
);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

async function sequential(take) {
  let allowed = 0;
  for (let i = 0; i < N; i++) if (await take(keys[i])) allowed++;
  return allowed;
}

// The sides take the workload's keys together, SLICE at a time, the order flipped every slice;
// returns each side's ns per take of every slice.
async function inLockstep(takes) {
  const slices = takes.map(() => []);
  for (let from = 0; from < N; from += SLICE) {
    const order = takes.map((_, i) => i);
    if ((from / SLICE) % 2 === 1) order.reverse();
    for (const i of order) {
      const take = takes[i];
      const t0 = process.hrtime.bigint();
      for (let k = from; k < from + SLICE; k++) await take(keys[k]);
      slices[i].push(Number(process.hrtime.bigint() - t0) / SLICE);
    }
  }
  return slices;
}

// Every limiter stays alive to the end, as a service's would (see bench/limiter.bench.mjs).
const kept = [];
for (const algorithm of algorithms) {
  const limit = {
    algorithm,
    limit: 50,
    window: 1000,
    ...(algorithm === 'sliding-window' ? { granularity: 100 } : {}),
  };
  const sides = [
    ['RateLimiterMemory', () => rlfTake(new RateLimiterMemory({ points: 50, duration: 1 }))],
    ...(args.includes('--floors')
      ? [
          ['bare fixed window', BareFixedWindow],
          ['bare store-shaped window', BareStoreShapedWindow],
          ['bare sliding log', BareSlidingLog],
          ['bare ring log', BareRingLog],
        ].map(([name, Bare]) => [
          name,
          () => {
            const bare = new Bare(50, 1000);
            return async (key) => (await bare.take(key)).allowed;
          },
        ])
      : []),
    ...builds.map((m, i) => [
      dists[i],
      () => {
        const limiter = m.createLimiter({ store: m.memoryStore(), ...limit, blockCache: false });
        return async (key) => (await limiter.take(key)).allowed;
      },
    ]),
  ];
  const ns = sides.map(() => []);
  for (let r = 0; r < WARMUP + rounds; r++) {
    const order = sides.map((_, i) => i);
    if (r % 2 === 1) order.reverse();
    if (lockstep) {
      const takes = sides.map(([, make]) => make());
      kept.push(takes);
      globalThis.gc();
      const slices = await inLockstep(takes);
      if (r >= WARMUP) for (const [i, xs] of slices.entries()) ns[i].push(...xs);
      continue;
    }
    for (const i of order) {
      const take = sides[i][1]();
      kept.push(take);
      globalThis.gc();
      const t0 = process.hrtime.bigint();
      await sequential(take);
      if (r >= WARMUP) ns[i].push(Number(process.hrtime.bigint() - t0) / N);
    }
  }
  const cells = sides.map(([name], i) => {
    const ratio = i === 0 ? '' : ` ${median(ns[0].map((x, k) => x / ns[i][k])).toFixed(2)}x`;
    return `${name} ${median(ns[i]).toFixed(0)} ns${ratio}`;
  });
  console.log(`${algorithm.padEnd(15)} ${cells.join(' | ')}`);
}
