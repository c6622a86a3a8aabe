// The bloom pre-check of a buffer layer (docs/pre-checks.md) on a replay: a consumer restarted
// from an older offset re-reads a log of which a known share it had already applied. Per event:
// `ledger.seen(e)` (drop it when the store says seen), else `ledger.apply(e)`. With a pre-check
// (createLedger({ preCheck: new SeenFilter({ expected: N }) })) a never-seen event skips the
// window read; without, every event reads it. The figures that matter are the store reads, counted
// in every timed run (a wrapper around the store's ledgerWindow, on both sides): reads avoided =
// 1 - reads(pre-check) / reads(plain). The throughput ratio is informative: on the memory store a
// read is a copy of one small array, on Redis a round trip.
//
// Shares: 10% seen is a catch-up replay (a consumer rewound a short overlap, then the backlog
// behind it is new: the common case after a crash or a rebalance); 50% seen is a replay that
// overlaps half of what it reads (a reset to an old checkpoint). The seen share is applied before
// each timed run (untimed), through the same ledger, so the pre-check's filter learned it as a
// filter saved with toJSON or rebuilt from the windows would have.
//
// `node bench/run.mjs precheck --rounds=1 --warmup=0`: about 40 s on 2 cores (the reads avoided
// are exact counts, the same in every round); `--rounds=3 --warmup=1` for steadier throughput
// ratios takes ~2.5 min, the default 5 + 2 rounds ~4 min. `--only=redis` (or memory) for one store.
import { Redis } from 'ioredis';
import { createLedger, memoryStore, SeenFilter } from '../dist/index.js';
import { createRedisStore } from '../dist/redis/index.js';
import { wrapStore } from '../dist/testing/index.js';
import { unlinkPrefix } from './lib/redis.mjs';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const N = 1_000_000;
// Redis: 100,000 events (a 1M replay there is ~1 min per run on one local server; the shares and
// so the reads avoided are the same at any N).
const REDIS_N = 100_000;
const OWNERS = 10_000;
// Every owner's window holds its whole history in the replay (N / OWNERS = 100 events each), so
// `seen` answers true for every event applied before: capacity 100 = the replay's depth per owner.
const CAPACITY = N / OWNERS;
// Redis: calls in flight, each lane owning its owners' events in order (partitions of a queue).
const LANES = 100;

const entries = Array.from({ length: N }, (_, i) => ({
  owner: `p${i % OWNERS}`,
  signature: `evt-${i}`,
  deltas: { coins: 1 },
}));

let client;
const prefix = `bench-precheck:${process.pid}:`;
let runs = 0;
const figures = {};

function counted(base) {
  const reads = { n: 0 };
  const store = wrapStore(base, {
    ledgerWindow: (ledger, owner) => {
      reads.n++;
      return base.ledgerWindow(ledger, owner);
    },
  });
  return { store, reads };
}

function lanesOf(n) {
  const lanes = Array.from({ length: LANES }, () => []);
  for (let i = 0; i < n; i++) lanes[(i % OWNERS) % LANES].push(i);
  return lanes;
}

async function prepare(kind, n, seenShare, withPreCheck) {
  const base =
    kind === 'redis'
      ? createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: 0 } })
      : memoryStore();
  const { store, reads } = counted(base);
  // expected = the replay's length: a generation holds every event of it (no rotation, no id
  // forgotten within the run); 1% per generation. 2 x 1.2 MB for 1M events.
  const preCheck = withPreCheck ? new SeenFilter({ expected: n, falsePositiveRate: 0.01 }) : undefined;
  const ledger = createLedger({
    store,
    capacity: CAPACITY,
    horizon: false,
    name: `run${runs++}`,
    ...(preCheck === undefined ? {} : { preCheck }),
  });
  const seen = Math.round(n * seenShare);
  if (kind === 'redis') await runLanes(lanesOf(seen), (i) => ledger.apply(entries[i]));
  else for (let i = 0; i < seen; i++) await ledger.apply(entries[i]);
  reads.n = 0;
  return { kind, ledger, reads, n, seen, dropped: 0, applied: 0, preCheck };
}

async function runLanes(lanes, step) {
  await Promise.all(
    lanes.map(async (lane) => {
      for (const i of lane) await step(i);
    }),
  );
}

async function step(state, i) {
  const e = entries[i];
  if (await state.ledger.seen(e)) state.dropped++;
  else if ((await state.ledger.apply(e)).outcome === 'applied') state.applied++;
}

async function replay(state) {
  if (state.kind === 'redis') await runLanes(lanesOf(state.n), (i) => step(state, i));
  else for (let i = 0; i < state.n; i++) await step(state, i);
  return state.n;
}

// Untimed: every event applied exactly once, every seen one dropped; the reads kept for the report.
function check(id, state) {
  if (state.dropped !== state.seen || state.applied !== state.n - state.seen) {
    throw new Error(`${id}: dropped ${state.dropped} of ${state.seen} seen, applied ${state.applied}`);
  }
  figures[id] = { reads: state.reads.n, bytes: state.preCheck?.bytes };
}

const line = (kind, n, share) => {
  const tag = `${kind} ${Math.round(share * 100)}% seen`;
  const side = (withPreCheck) => ({
    id: withPreCheck ? 'pre-check' : 'plain',
    label: withPreCheck
      ? `seen (SeenFilter({ expected: ${n.toLocaleString('en')} }) in front) then apply`
      : 'seen (a window read every time) then apply',
    prepare: () => prepare(kind, n, share, withPreCheck),
    run: replay,
    dispose: async (state) => {
      check(`${tag} ${withPreCheck ? 'pre' : 'plain'}`, state);
      if (kind === 'redis') await unlinkPrefix(client, `${prefix}`).catch(() => {});
    },
  });
  return {
    name: `${tag}: ${n.toLocaleString('en')} events`,
    note: 'informative: the figures that matter are the store reads in the workload line',
    sides: [side(true), side(false)],
  };
};

export default {
  name: 'precheck',
  title: 'Bloom pre-check in front of ledger.seen on a replay, vs the same replay without it',
  async setup() {
    client = new Redis(URL);
    await client.ping();
    return {};
  },
  async teardown() {
    await unlinkPrefix(client, prefix);
    client.disconnect();
  },
  describe: () => {
    const pct = (x) => `${(x * 100).toFixed(1)}%`;
    const parts = [];
    for (const [kind, n] of [
      ['memory', N],
      ['redis', REDIS_N],
    ]) {
      for (const share of [0.1, 0.5]) {
        const tag = `${kind} ${Math.round(share * 100)}% seen`;
        const pre = figures[`${tag} pre`];
        const plain = figures[`${tag} plain`];
        if (pre === undefined || plain === undefined) continue;
        parts.push(
          `${tag} (${n.toLocaleString('en')} events): store reads plain ${plain.reads.toLocaleString('en')}, ` +
            `pre-check ${pre.reads.toLocaleString('en')} (${pct(1 - pre.reads / plain.reads)} avoided; ` +
            `false-positive reads ${(pre.reads - Math.round(n * share)).toLocaleString('en')})`,
        );
      }
    }
    const bytes = figures['memory 10% seen pre']?.bytes;
    return (
      `replay of ${N.toLocaleString('en')} events (memory) and ${REDIS_N.toLocaleString('en')} (redis, ${LANES} lanes) ` +
      `over ${OWNERS.toLocaleString('en')} owners; a share applied before the run; every event applied exactly once, every seen one dropped` +
      (bytes === undefined ? '' : `; filter ${bytes.toLocaleString('en')} bytes for 1M`) +
      `\n${parts.join('\n')}`
    );
  },
  comparisons: () => [
    line('memory', N, 0.1),
    line('memory', N, 0.5),
    line('redis', REDIS_N, 0.1),
    line('redis', REDIS_N, 0.5),
  ],
};
