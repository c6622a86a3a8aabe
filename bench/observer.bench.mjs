// What the observer costs (docs/observability.md): ledger apply and limiter take on the memory
// store with an observer that does nothing, next to the same with none. Target: at most 5% slower
// observed (ratio >= 0.95). With ONCEFLOW_BASELINE_DIST set to another build's dist/ (the commit
// before the observer, built with `npx tsc -p tsconfig.build.json`), two more comparisons put
// this build unobserved next to that one: "no observer costs nothing" is a ratio of 1 within noise.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as current from '../dist/index.js';
import { checkOutcomes, prng, settlementStream } from './lib/workload.mjs';

const PLAYERS = 10_000;
const ROUNDS = 8; // ≈ 195 000 deliveries, as the ledger suite
const DUP_RATE = 0.22;
const TAKES = 200_000;
const KEYS = 5_000;
// Far above any key's takes in a run (~40 per key): every take is allowed, so both sides do the
// same work (verified below).
const LIMIT = 1_000_000;

const baselineDir = process.env.ONCEFLOW_BASELINE_DIST;
const baseline =
  baselineDir === undefined ? undefined : await import(pathToFileURL(resolve(baselineDir, 'index.js')).href);

const settlement = current.defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

let stream;
let keys;
let events = 0;
// Does nothing but what any observer must: be called. Counting keeps the call from being dropped.
const nothing = () => {
  events++;
};

// One loop per side: a call site shared by two builds' classes would be polymorphic and slow both.
async function applyObserved(ledger) {
  const { length, owners, signatures, nets, rooms } = stream;
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
async function applyUnobserved(ledger) {
  const { length, owners, signatures, nets, rooms } = stream;
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
async function applyBaseline(ledger) {
  const { length, owners, signatures, nets, rooms } = stream;
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
async function takeObserved(limiter) {
  for (let i = 0; i < TAKES; i++) await limiter.take(keys[i]);
  return TAKES;
}
async function takeUnobserved(limiter) {
  for (let i = 0; i < TAKES; i++) await limiter.take(keys[i]);
  return TAKES;
}
async function takeBaseline(limiter) {
  for (let i = 0; i < TAKES; i++) await limiter.take(keys[i]);
  return TAKES;
}

const ledgerOf = (lib, observer) => () =>
  lib.createLedger({ capacity: 4, ...(observer ? { observer } : {}) });
const limiterOf = (lib, observer) => () =>
  lib.createLimiter({ algorithm: 'gcra', limit: LIMIT, window: 1000, ...(observer ? { observer } : {}) });

async function verifyLedger(make) {
  const ledger = make();
  const counts = { applied: 0, duplicate: 0, stale: 0 };
  const { length, owners, signatures, nets, rooms } = stream;
  for (let i = 0; i < length; i++) {
    const r = await ledger.apply({
      owner: owners[i],
      signature: signatures[i],
      deltas: { coins: nets[i] },
      scope: rooms[i],
    });
    counts[r.outcome]++;
  }
  checkOutcomes(stream, counts);
}
async function verifyLimiter(make, observed) {
  const limiter = make();
  const before = events;
  for (let i = 0; i < TAKES; i++) {
    if (!(await limiter.take(keys[i])).allowed) throw new Error(`take ${i} refused`);
  }
  if (observed && events - before !== TAKES) throw new Error(`${events - before} events for ${TAKES} takes`);
}

const side = (id, label, prepare, run, verify) => ({ id, label, prepare, run, verify });
const ledgerSide = (id, lib, observer, run) =>
  side(
    id,
    `createLedger({ capacity: 4${observer ? ', observer: () => {}' : ''} }).apply(...)${lib === current ? '' : ' (baseline build)'}`,
    ledgerOf(lib, observer),
    run,
    () => verifyLedger(ledgerOf(lib, observer)),
  );
const limiterSide = (id, lib, observer, run) =>
  side(
    id,
    `createLimiter({ algorithm: 'gcra', limit: 1e6, window: 1000${observer ? ', observer: () => {}' : ''} }).take(key)${lib === current ? '' : ' (baseline build)'}`,
    limiterOf(lib, observer),
    run,
    () => verifyLimiter(limiterOf(lib, observer), observer !== undefined),
  );

export default {
  name: 'observer',
  title: 'The observer: ledger apply and limiter take (memory store), observed vs not',
  setup() {
    stream = settlementStream({ sign: settlement, players: PLAYERS, rounds: ROUNDS, dupRate: DUP_RATE });
    const random = prng(20261206);
    keys = Array.from({ length: TAKES }, () => `user-${Math.floor(random() * KEYS)}`);
    return stream;
  },
  describe: (s) =>
    `${s.length.toLocaleString('en')} ledger deliveries to ${PLAYERS.toLocaleString('en')} players; ` +
    `${TAKES.toLocaleString('en')} takes over ${KEYS.toLocaleString('en')} keys; one awaited call at a time` +
    (baseline === undefined ? '' : `; baseline build: ${baselineDir}`),
  comparisons: () => [
    {
      name: 'ledger apply: observed vs not',
      note: 'an observer that only counts; target: at most 5% slower',
      target: 0.95,
      sides: [
        ledgerSide('observed', current, nothing, applyObserved),
        ledgerSide('unobserved', current, undefined, applyUnobserved),
      ],
    },
    {
      name: 'limiter take: observed vs not',
      note: 'an observer that only counts; target: at most 5% slower',
      target: 0.95,
      sides: [
        limiterSide('observed', current, nothing, takeObserved),
        limiterSide('unobserved', current, undefined, takeUnobserved),
      ],
    },
    ...(baseline === undefined
      ? []
      : [
          {
            name: 'ledger apply: unobserved vs the baseline build',
            note: 'informative: no observer should cost nothing (1.00x within noise)',
            sides: [
              ledgerSide('unobserved', current, undefined, applyUnobserved),
              ledgerSide('baseline', baseline, undefined, applyBaseline),
            ],
          },
          {
            name: 'limiter take: unobserved vs the baseline build',
            note: 'informative: no observer should cost nothing (1.00x within noise)',
            sides: [
              limiterSide('unobserved', current, undefined, takeUnobserved),
              limiterSide('baseline', baseline, undefined, takeBaseline),
            ],
          },
        ]),
  ],
};
