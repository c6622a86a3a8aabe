// SignatureWindow.admit, one window per owner in a Map, next to the obvious hand-written
// baseline: a Map of plain arrays doing includes, then push and shift when over capacity.
import { defineSignature, SignatureWindow } from '../dist/index.js';
import { settlementStream } from './lib/workload.mjs';

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

// Capacity 4: the settlement window of DESIGN §3.2 (2 settlements x 2 overlapping rounds), over the
// same population as the ledger bench. Capacity 64 takes the Set-index path of SignatureWindow
// (capacity > 32); fewer owners and more rounds, so every window fills and evicts for real.
const SMALL = { capacity: 4, players: 10_000, rounds: 40, dupRate: 0.22, seed: 42 };
const LARGE = { capacity: 64, players: 1_000, rounds: 400, dupRate: 0.22, seed: 7 };

// One loop per side (not one loop with a callback): each side's call sites then stay monomorphic,
// as they would in an application that uses only one of them.
function admitWindows(capacity, s) {
  const { length, owners, signatures } = s;
  const windows = new Map();
  let duplicates = 0;
  for (let i = 0; i < length; i++) {
    const owner = owners[i];
    let w = windows.get(owner);
    if (w === undefined) {
      w = new SignatureWindow({ capacity });
      windows.set(owner, w);
    }
    if (w.admit(signatures[i]) === 'duplicate') duplicates++;
  }
  return duplicates;
}

function admitArrays(capacity, s) {
  const { length, owners, signatures } = s;
  const windows = new Map();
  let duplicates = 0;
  for (let i = 0; i < length; i++) {
    const owner = owners[i];
    let w = windows.get(owner);
    if (w === undefined) {
      w = [];
      windows.set(owner, w);
    }
    const signature = signatures[i];
    if (w.includes(signature)) duplicates++;
    else {
      w.push(signature);
      if (w.length > capacity) w.shift();
    }
  }
  return duplicates;
}

const streams = {};

function comparison(name, config, target) {
  const s = () => streams[config.capacity];
  const check = (what, got) => {
    if (got !== s().duplicates) throw new Error(`${what}: ${got} duplicates, expected ${s().duplicates}`);
  };
  return {
    name,
    note: `${s().length.toLocaleString('en')} admits over ${config.players.toLocaleString('en')} owners`,
    target,
    sides: [
      {
        id: 'onceflow',
        label: `Map<owner, SignatureWindow({ capacity: ${config.capacity} })>, admit(signature)`,
        prepare: () => null,
        run: () => {
          admitWindows(config.capacity, s());
          return s().length;
        },
        verify: () => check('SignatureWindow', admitWindows(config.capacity, s())),
      },
      {
        id: 'array',
        label: `Map<owner, string[]>, includes, then push + shift past ${config.capacity}`,
        prepare: () => null,
        run: () => {
          admitArrays(config.capacity, s());
          return s().length;
        },
        verify: () => check('array baseline', admitArrays(config.capacity, s())),
      },
    ],
  };
}

export default {
  name: 'window',
  title: 'SignatureWindow.admit vs a hand-written Map of arrays',
  setup() {
    for (const c of [SMALL, LARGE]) streams[c.capacity] = settlementStream({ sign: settlement, ...c });
    return streams;
  },
  describe: () =>
    `settlement signatures, ~18% repeats (each within the capacity-4 bound); fresh windows per run`,
  comparisons: () => [
    comparison('capacity 4', SMALL, 0.6),
    comparison('capacity 64 (Set index)', LARGE, 0.6),
  ],
};
