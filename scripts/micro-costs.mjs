#!/usr/bin/env node
// The small in-process costs that comments in src/ state as reasons for a choice, each next to
// the road not taken, in one process (ns per call, median of ROUNDS interleaved rounds):
//   map-evict    a full Map of 20,000 entries evicted from its front
//                (`map.delete(map.keys().next().value)` then `set`), against BoundedMap and LruMap
//                (src/core/bounded-map.ts, lru-map.ts) and a plain set of a new key
//   own-record   ownRecord (src/core/own-record.ts) against Object.fromEntries on a one-field Map
//   journal      the heap one memory-store journal entry with one delta takes: the ledger bench's
//                stream applied with the journal kept in full, minus the same with none kept, after
//                full GCs (src/store/memory/memory-store.ts: its retention default and StoredEntry)
// Usage: npm run build && node --expose-gc scripts/micro-costs.mjs [map-evict|own-record|journal ...]
import { createLedger, defineSignature, memoryStore } from 'onceflow';
import { SETTLEMENT_FIELDS, settlementEntry, settlementStream } from '../bench/lib/workload.mjs';
import { BoundedMap } from '../dist/core/bounded-map.js';
import { LruMap } from '../dist/core/lru-map.js';
import { ownRecord } from '../dist/core/own-record.js';

const ROUNDS = 7;
const picked = process.argv.slice(2);
const wanted = (name) => picked.length === 0 || picked.includes(name);

/** Median ns per call of each side, sides interleaved round by round (order flipped each round). */
function compare(sides, calls) {
  const names = Object.keys(sides);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 ? [...names].reverse() : names) {
      const run = sides[name]();
      globalThis.gc?.();
      const t0 = process.hrtime.bigint();
      run(calls);
      times[name].push(Number(process.hrtime.bigint() - t0) / calls);
    }
  }
  return names.map((name) => {
    const t = times[name].sort((a, b) => a - b);
    return { side: name, 'ns/call': Number(t[t.length >> 1].toFixed(1)) };
  });
}

let sink = 0;

if (wanted('map-evict')) {
  const SIZE = 20_000;
  const CALLS = 200_000;
  const full = (make, set) => {
    const m = make();
    for (let i = 0; i < SIZE; i++) set(m, `k${i}`, i);
    return m;
  };
  // New keys made before the timing, so a string's concatenation and hashing is not timed.
  const fresh = Array.from({ length: CALLS }, (_, i) => `n${i}`);
  const setMap = (m, k, v) => m.set(k, v);
  console.log(
    `map-evict: ${CALLS.toLocaleString('en')} inserts of new keys into a full map of ${SIZE.toLocaleString('en')}`,
  );
  console.table(
    compare(
      {
        'Map, evicted from its front': () => {
          const m = full(() => new Map(), setMap);
          return (n) => {
            for (let i = 0; i < n; i++) {
              m.delete(m.keys().next().value);
              m.set(fresh[i], i);
            }
            sink += m.size;
          };
        },
        BoundedMap: () => {
          const m = full(() => new BoundedMap(SIZE), setMap);
          return (n) => {
            for (let i = 0; i < n; i++) m.set(fresh[i], i);
            sink += m.size;
          };
        },
        LruMap: () => {
          const m = full(() => new LruMap(SIZE), setMap);
          return (n) => {
            for (let i = 0; i < n; i++) m.set(fresh[i], i);
            sink += m.size;
          };
        },
        'Map, set only (grows)': () => {
          const m = full(() => new Map(), setMap);
          return (n) => {
            for (let i = 0; i < n; i++) m.set(fresh[i], i);
            sink += m.size;
          };
        },
      },
      CALLS,
    ),
  );
}

if (wanted('own-record')) {
  const CALLS = 1_000_000;
  const one = new Map([['coins', '125']]);
  console.log(`own-record: ${CALLS.toLocaleString('en')} objects from a one-field Map`);
  console.table(
    compare(
      {
        ownRecord: () => (n) => {
          for (let i = 0; i < n; i++) sink += ownRecord(one).coins.length;
        },
        'Object.fromEntries': () => (n) => {
          for (let i = 0; i < n; i++) sink += Object.fromEntries(one).coins.length;
        },
      },
      CALLS,
    ),
  );
}

if (wanted('journal')) {
  if (!globalThis.gc) throw new Error('journal: run with node --expose-gc');
  // The ledger bench's stream (bench/ledger.bench.mjs): 10,000 players, 8 rounds, 22% repeats.
  const stream = settlementStream({
    sign: defineSignature(SETTLEMENT_FIELDS),
    players: 10_000,
    rounds: 8,
    dupRate: 0.22,
  });
  /** Heap held by a memory ledger after applying the whole stream, with `journal` retention. */
  const heldBy = async (journal) => {
    globalThis.gc();
    const before = process.memoryUsage().heapUsed;
    // 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap (docs/ledger.md).
    const ledger = createLedger({ store: memoryStore({ journal }), capacity: 4 });
    let applied = 0;
    for (let i = 0; i < stream.length; i++) {
      if ((await ledger.apply(settlementEntry(stream, i))).outcome === 'applied') applied++;
    }
    globalThis.gc();
    const held = process.memoryUsage().heapUsed - before;
    sink += (await ledger.journal({ owner: stream.owners[0], limit: 1 })).length;
    return { held, applied };
  };
  const kept = await heldBy({ maxEntries: Infinity });
  const none = await heldBy({ maxEntries: 0 });
  console.log(
    `journal: ${kept.applied.toLocaleString('en')} entries with one delta, kept in full minus kept none: ` +
      `${((kept.held - none.held) / kept.applied).toFixed(0)} B of heap each`,
  );
}

if (sink === 0.5) console.log(sink); // keeps the results alive
