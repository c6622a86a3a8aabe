// Ledger apply on the memory store, next to rate-limiter-flexible's RateLimiterMemory.consume:
// both are "one async call per incoming event, keyed by player, state in a Map".
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { createLedger, defineSignature, memoryStore } from '../dist/index.js';
import { BareLedger } from './lib/ledger-floor.mjs';
import { checkOutcomes, settlementStream } from './lib/workload.mjs';

const PLAYERS = 10_000;
const ROUNDS = 8; // 8 rounds x 10 000 players x 2 settlements, plus ~22% repeats ≈ 195 000 deliveries
const DUP_RATE = 0.22;
const IN_FLIGHT = 100;
// Far above the ~20 consumes a key gets per run (~195,000 deliveries over 10,000 players): the
// limiter always allows (verifyLimiter checks that none is refused).
const RLF_POINTS = 1_000_000;
// A realistic window: each key's record gets one unref'd expiry timer on its first consume.
const RLF_DURATION_S = 60;

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

// 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap (DESIGN §3.2); the
// stream's repeats stay inside that bound, so every repeat must come back `duplicate`.
const newLedger = () => createLedger({ capacity: 4 });
const newLedgerWithoutJournal = () =>
  createLedger({ capacity: 4, store: memoryStore({ journal: { maxEntries: 0 } }) });
const newLimiter = (points) => new RateLimiterMemory({ points, duration: RLF_DURATION_S });
// Each key's record holds a 60 s timer (unref'd) that keeps the limiter's Map alive after the run:
// delete every key once it is timed, or dozens of dead limiters would bloat the heap of later runs.
const disposeLimiter = async (limiter) => {
  for (let p = 0; p < PLAYERS; p++) await limiter.delete(`player-${p}`);
};

async function applySequential(ledger, s) {
  const { length, owners, signatures, nets, rooms } = s;
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

async function consumeSequential(limiter, s) {
  const { length, owners } = s;
  for (let i = 0; i < length; i++) await limiter.consume(owners[i]);
  return length;
}

async function applyConcurrent(ledger, s) {
  const { length, owners, signatures, nets, rooms } = s;
  const batch = new Array(IN_FLIGHT);
  for (let i = 0; i < length; i += IN_FLIGHT) {
    const n = Math.min(IN_FLIGHT, length - i);
    if (n < IN_FLIGHT) batch.length = n;
    for (let j = 0; j < n; j++) {
      const k = i + j;
      batch[j] = ledger.apply({
        owner: owners[k],
        signature: signatures[k],
        deltas: { coins: nets[k] },
        scope: rooms[k],
      });
    }
    await Promise.all(batch);
  }
  return length;
}

async function consumeConcurrent(limiter, s) {
  const { length, owners } = s;
  const batch = new Array(IN_FLIGHT);
  for (let i = 0; i < length; i += IN_FLIGHT) {
    const n = Math.min(IN_FLIGHT, length - i);
    if (n < IN_FLIGHT) batch.length = n;
    for (let j = 0; j < n; j++) batch[j] = limiter.consume(owners[i + j]);
    await Promise.all(batch);
  }
  return length;
}

// RLF rejects with a RateLimiterRes (not an Error: no stack trace is captured).
async function consumeSequentialRejecting(limiter, s) {
  const { length, owners } = s;
  for (let i = 0; i < length; i++) {
    try {
      await limiter.consume(owners[i]);
    } catch {}
  }
  return length;
}

async function verifyLedger(s, create) {
  const ledger = create();
  const counts = { applied: 0, duplicate: 0, stale: 0 };
  for (let i = 0; i < s.length; i++) {
    const r = await ledger.apply({
      owner: s.owners[i],
      signature: s.signatures[i],
      deltas: { coins: s.nets[i] },
      scope: s.rooms[i],
    });
    counts[r.outcome]++;
  }
  checkOutcomes(s, counts);
}

async function verifyLimiter(s, points, expectRejected) {
  const limiter = newLimiter(points);
  let rejected = 0;
  for (let i = 0; i < s.length; i++) {
    try {
      await limiter.consume(s.owners[i]);
    } catch (e) {
      if (e instanceof Error) throw e;
      rejected++;
    }
  }
  await disposeLimiter(limiter);
  if (expectRejected ? rejected < s.length - PLAYERS : rejected !== 0) {
    throw new Error(`RateLimiterMemory rejected ${rejected} of ${s.length}`);
  }
}

const onceflowSide = (run, journal = true) => ({
  id: 'onceflow',
  label: journal
    ? 'createLedger({ capacity: 4 }).apply(...) (default memory store: journal keeps every entry)'
    : 'createLedger({ capacity: 4, store: memoryStore({ journal: { maxEntries: 0 } }) }).apply(...)',
  prepare: journal ? newLedger : newLedgerWithoutJournal,
  run: (ledger) => run(ledger, stream),
  verify: (s) => verifyLedger(s, journal ? newLedger : newLedgerWithoutJournal),
});

let stream;

/**
 * The floor of "one awaited call per event, state per owner in a Map": a ledger with nothing but a
 * window of 4 (an array scan) and number balances. No validation, journal, scope totals, bigint
 * amounts or horizon. Not a product: it shows what the 3x target asks of any ledger on this workload.
 */
class MinimalLedger {
  #owners = new Map();
  apply({ owner, signature, deltas }) {
    let state = this.#owners.get(owner);
    if (state === undefined) this.#owners.set(owner, (state = { window: [], coins: 0 }));
    if (state.window.includes(signature)) {
      return Promise.resolve({ outcome: 'duplicate', balances: { coins: state.coins } });
    }
    if (state.window.length === 4) state.window.shift();
    state.window.push(signature);
    state.coins += deltas.coins;
    return Promise.resolve({ outcome: 'applied', balances: { coins: state.coins } });
  }
}

// applySequential's loop, apart: one loop calling two classes' apply would make that call site
// polymorphic, and slow the onceflow side of the other comparisons.
async function applyMinimal(ledger, s) {
  const { length, owners, signatures, nets, rooms } = s;
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

const minimalSide = {
  id: 'minimal',
  label: 'a 15-line ledger: Map of { window: string[4], coins: number }, Promise.resolve per call',
  prepare: () => new MinimalLedger(),
  run: (ledger) => applyMinimal(ledger, stream),
  verify: (s) => verifyLedger(s, () => new MinimalLedger()),
};

// applySequential's loop again, for the bare ledger's call site (see applyMinimal).
async function applyBare(ledger, s) {
  const { length, owners, signatures, nets, rooms } = s;
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

const bareSide = {
  id: 'bare',
  label: 'a bare ledger doing the same work (bench/lib/ledger-floor.mjs)',
  prepare: () => new BareLedger(),
  run: (ledger) => applyBare(ledger, stream),
  verify: (s) => verifyLedger(s, () => new BareLedger()),
};

/** The rate-limiter-flexible side: `points` 1e6 never rejects (verified); 1 rejects after a key's first. */
const rlfSide = (run, points = RLF_POINTS) => ({
  id: 'rlf',
  label:
    `RateLimiterMemory({ points: ${points === RLF_POINTS ? '1e6' : points}, duration: ${RLF_DURATION_S} }).consume(owner)` +
    (points === RLF_POINTS ? '' : ' (rejects)'),
  prepare: () => newLimiter(points),
  dispose: disposeLimiter,
  run: (limiter) => run(limiter, stream),
  verify: (s) => verifyLimiter(s, points, points !== RLF_POINTS),
});

export default {
  name: 'ledger',
  title: 'Ledger apply (memory store) vs rate-limiter-flexible RateLimiterMemory.consume',
  setup() {
    stream = settlementStream({ sign: settlement, players: PLAYERS, rounds: ROUNDS, dupRate: DUP_RATE });
    return stream;
  },
  describe: (s) =>
    `${s.length.toLocaleString('en')} deliveries to ${PLAYERS.toLocaleString('en')} players ` +
    `(${s.fresh.toLocaleString('en')} fresh settlements, ${s.duplicates.toLocaleString('en')} repeats); ` +
    `a fresh ledger / limiter per run`,
  comparisons: () => [
    {
      name: 'sequential await',
      note: 'one call awaited at a time',
      target: 3,
      sides: [onceflowSide(applySequential), rlfSide(consumeSequential)],
    },
    {
      name: `concurrent, ${IN_FLIGHT} in flight`,
      note: `batches of ${IN_FLIGHT} calls, then await Promise.all(batch)`,
      target: 3,
      sides: [onceflowSide(applyConcurrent), rlfSide(consumeConcurrent)],
    },
    {
      name: 'vs a bare ledger doing the same work',
      note: 'one call awaited at a time; the floor checks, books, journals and answers as the memory store',
      target: 0.6,
      sides: [onceflowSide(applySequential), bareSide],
    },
    {
      name: 'sequential await, journal off',
      note: 'informative: the same, with the memory store told to keep no journal',
      sides: [onceflowSide(applySequential, false), rlfSide(consumeSequential)],
    },
    {
      name: 'floor: a minimal ledger vs RLF',
      note: 'informative: the target asks 3x of RLF; this is what a ledger with nothing around its window does',
      sides: [minimalSide, rlfSide(consumeSequential)],
    },
    {
      name: 'sequential await, RLF rejecting',
      note: 'informative: points 1, so every consume after a key’s first rejects',
      sides: [onceflowSide(applySequential), rlfSide(consumeSequentialRejecting, 1)],
    },
  ],
};
