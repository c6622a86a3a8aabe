// Ordering: ReorderBuffer.push next to a sorted-array reorder buffer at 0%, 5% and 30% disorder,
// and Snowflake ids next to @sapphire/snowflake.
import { Snowflake as Sapphire } from '@sapphire/snowflake';
import { ReorderBuffer, Snowflake } from '../dist/index.js';
import { prng } from './lib/workload.mjs';

// 1M events: a run then lasts tens of ms, so fixed costs around it (concurrent sweeping after the
// harness's gc(), a recompilation) stay a small share of it.
const EVENTS = 1_000_000;
// A displaced event arrives up to 256 places late (a partition rebalance, a retried batch).
const MAX_DISPLACEMENT = 256;
// 1024 >= 256 + 1 (DESIGN §3.4: the window must cover the largest displacement), with room to spare
// so no push overflows; the gap timeout never fires (nothing is lost), so both sides do the same work.
const CAPACITY = 1024;
const IDS = 1_000_000;
const EPOCH = Date.UTC(2024, 0, 1);

/** Sequence numbers 0..n-1 in delivery order: a share `disorder` of them arrive 1..D places late. */
function deliveryOrder(n, disorder, seed) {
  const random = prng(seed);
  const keyed = new Array(n);
  for (let i = 0; i < n; i++) {
    const late = random() < disorder ? 1 + Math.floor(random() * MAX_DISPLACEMENT) : 0;
    keyed[i] = { seq: i, key: i + late + 0.5 * (late > 0) };
  }
  keyed.sort((a, b) => a.key - b.key);
  return Int32Array.from(keyed, (k) => k.seq);
}

/**
 * The baseline: what a reorder buffer usually starts as. Pending events sit in an array kept
 * sorted by sequence (binary search, splice); the head is released while it is the next number.
 */
class SortedArrayBuffer {
  constructor(next) {
    this.next = next;
    this.pending = [];
  }
  push(seq, item) {
    if (seq < this.next) return [];
    const out = [];
    if (seq === this.next) {
      out.push({ seq, item, late: false });
      this.next++;
      const p = this.pending;
      while (p.length > 0 && p[0].seq === this.next) {
        out.push(p.shift());
        this.next++;
      }
      return out;
    }
    const p = this.pending;
    let lo = 0;
    let hi = p.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (p[mid].seq < seq) lo = mid + 1;
      else hi = mid;
    }
    if (p[lo]?.seq === seq) return out; // duplicate
    p.splice(lo, 0, { seq, item, late: false });
    return out;
  }
}

// One loop per side, identical in text: a shared loop would see both buffer classes and turn its
// call site polymorphic, charging each side for the other's presence (a real consumer has one).
/**
 * The naive form of the same: every early event is appended and the array re-sorted (the quickest
 * way to write the seeds' "insert into an ordered set" in JavaScript). A second, informative baseline.
 */
class SortOnInsertBuffer {
  constructor(next) {
    this.next = next;
    this.pending = [];
  }
  push(seq, item) {
    if (seq < this.next) return [];
    const out = [];
    const p = this.pending;
    if (seq !== this.next) {
      if (!p.some((e) => e.seq === seq)) {
        p.push({ seq, item, late: false });
        p.sort((a, b) => a.seq - b.seq);
      }
      return out;
    }
    out.push({ seq, item, late: false });
    this.next++;
    while (p.length > 0 && p[0].seq === this.next) {
      out.push(p.shift());
      this.next++;
    }
    return out;
  }
}

// Three identical loops on purpose, one per side: a shared loop would see three buffer classes at
// its `buffer.push` call site and go polymorphic, charging every side for the others' presence.
function pushAllSortOnInsert(buffer, order) {
  let released = 0;
  for (let i = 0; i < order.length; i++) {
    const seq = order[i];
    released += buffer.push(seq, seq, i).length;
  }
  return released;
}

function pushAllOnceflow(buffer, order) {
  let released = 0;
  for (let i = 0; i < order.length; i++) {
    const seq = order[i];
    released += buffer.push(seq, seq, i).length;
  }
  return released;
}

function pushAllSorted(buffer, order) {
  let released = 0;
  for (let i = 0; i < order.length; i++) {
    const seq = order[i];
    released += buffer.push(seq, seq, i).length;
  }
  return released;
}

// A consumer's buffer lives as long as the consumer. The verify pass keeps one buffer of each side
// alive for the whole suite, as a running consumer would: otherwise the harness's full gc() between
// runs frees the buffer's hidden class once no instance is left, and each run would start from
// deoptimized code (both sides alike, but a faster run pays a larger share).
const longLived = [];

function checkInOrder(buffer, order, what) {
  longLived.push(buffer);
  let expected = 0;
  for (let i = 0; i < order.length; i++) {
    for (const r of buffer.push(order[i], order[i], i)) {
      if (r.seq !== expected || r.item !== expected)
        throw new Error(`${what}: released ${r.seq}, expected ${expected}`);
      expected++;
    }
  }
  if (expected !== order.length) throw new Error(`${what}: released ${expected} of ${order.length}`);
}

const orders = {};

// The sorted-array baseline keeps its pending events for up to 256 pushes, so many survive into the
// old generation; the harness's gc() before the next run frees them but leaves the sweeping to
// run concurrently with it, on whichever side runs next. Two full collections before that one
// finish the sweeping first (a major GC completes the previous one's sweep), so no run pays for
// the other side's garbage. Both sides' prepare() do it.
const settled = (make) => () => {
  globalThis.gc?.();
  globalThis.gc?.();
  return make();
};

function naiveComparison(disorder) {
  const pct = `${Math.round(disorder * 100)}%`;
  const order = () => orders[pct];
  const newBuffer = () => new ReorderBuffer({ capacity: CAPACITY, gapTimeout: '1s' });
  return {
    name: `reorder push, ${pct} disorder, vs sort-on-insert`,
    note: 'informative: the naive sorted array (append + sort) instead of binary insertion',
    sides: [
      {
        id: 'onceflow',
        label: `ReorderBuffer({ capacity: ${CAPACITY}, gapTimeout: '1s' }).push(seq, item, now)`,
        prepare: settled(newBuffer),
        run: (buffer) => pushAllOnceflow(buffer, order()),
      },
      {
        id: 'sort-on-insert',
        label: 'array of pending events, append + sort((a, b) => a.seq - b.seq), head released with shift',
        prepare: settled(() => new SortOnInsertBuffer(0)),
        run: (buffer) => pushAllSortOnInsert(buffer, order()),
        verify: () => checkInOrder(new SortOnInsertBuffer(0), order(), 'sort-on-insert'),
      },
    ],
  };
}

function reorderComparison(disorder, target) {
  const pct = `${Math.round(disorder * 100)}%`;
  const order = () => orders[pct];
  const newBuffer = () => new ReorderBuffer({ capacity: CAPACITY, gapTimeout: '1s' });
  return {
    name: `reorder push, ${pct} disorder`,
    note: `${EVENTS.toLocaleString('en')} events, ${pct} of them up to ${MAX_DISPLACEMENT} places late`,
    ...(target === undefined ? {} : { target }),
    sides: [
      {
        id: 'onceflow',
        label: `ReorderBuffer({ capacity: ${CAPACITY}, gapTimeout: '1s' }).push(seq, item, now)`,
        prepare: settled(newBuffer),
        run: (buffer) => pushAllOnceflow(buffer, order()),
        verify: () => checkInOrder(newBuffer(), order(), 'ReorderBuffer'),
      },
      {
        id: 'sorted-array',
        label: 'sorted array of pending events (binary search + splice), head released with shift',
        prepare: settled(() => new SortedArrayBuffer(0)),
        run: (buffer) => pushAllSorted(buffer, order()),
        verify: () => checkInOrder(new SortedArrayBuffer(0), order(), 'sorted array'),
      },
    ],
  };
}

function generateOnceflow(flake) {
  let last = 0n;
  for (let i = 0; i < IDS; i++) last = flake.next();
  return last > 0n ? IDS : 0;
}

function generateSapphire(sapphire) {
  let last = 0n;
  for (let i = 0; i < IDS; i++) last = sapphire.generate();
  return last > 0n ? IDS : 0;
}

/** Counts ids that are not above the one before (a repeat or a step back) in IDS ids. */
function notIncreasing(next) {
  let last = -1n;
  let bad = 0;
  for (let i = 0; i < IDS; i++) {
    const id = next();
    if (id <= last) bad++;
    last = id;
  }
  return bad;
}

/** Counts repeated ids among IDS ids made in a tight loop (stored, then sorted: no Set slows it). */
function duplicates(next) {
  const ids = new BigInt64Array(IDS);
  for (let i = 0; i < IDS; i++) ids[i] = next();
  ids.sort();
  let repeated = 0;
  for (let i = 1; i < IDS; i++) if (ids[i] === ids[i - 1]) repeated++;
  return repeated;
}

const repeats = {};

export default {
  name: 'ordering',
  title: 'ReorderBuffer vs a sorted array; Snowflake vs @sapphire/snowflake',
  setup() {
    orders['0%'] = deliveryOrder(EVENTS, 0, 1);
    orders['5%'] = deliveryOrder(EVENTS, 0.05, 2);
    orders['30%'] = deliveryOrder(EVENTS, 0.3, 3);
    const flake = new Snowflake({ worker: 1, epoch: EPOCH });
    const sapphire = new Sapphire(EPOCH);
    repeats.onceflow = duplicates(() => flake.next());
    repeats.sapphire = duplicates(() => sapphire.generate());
    return orders;
  },
  describe: () =>
    `reorder: ${EVENTS.toLocaleString('en')} pushes per run, every event delivered once; snowflake: ${IDS.toLocaleString('en')} ids per run from one generator, default layouts (12-bit sequence). ` +
    `Repeated ids among ${IDS.toLocaleString('en')} made in a tight loop: onceflow ${repeats.onceflow.toLocaleString('en')}, @sapphire/snowflake ${repeats.sapphire.toLocaleString('en')} (its 12-bit increment wraps and repeats itself within a millisecond; onceflow waits for the next ms, so one generator tops out at 4,096,000 ids/s)`,
  comparisons: () => [
    reorderComparison(0),
    reorderComparison(0.05, 5),
    reorderComparison(0.3),
    naiveComparison(0.05),
    {
      name: 'snowflake ids',
      note: 'one generator, tight loop, default layouts',
      target: 1,
      sides: [
        {
          id: 'onceflow',
          label: 'new Snowflake({ worker: 1 }).next() (unique: waits for the next ms after 4096)',
          prepare: () => new Snowflake({ worker: 1, epoch: EPOCH }),
          run: generateOnceflow,
          verify: () => {
            const flake = new Snowflake({ worker: 1, epoch: EPOCH });
            const bad = notIncreasing(() => flake.next());
            if (bad !== 0) throw new Error(`onceflow: ${bad} ids not increasing`);
          },
        },
        {
          id: 'sapphire',
          label: 'new Snowflake(epoch).generate() of @sapphire/snowflake',
          prepare: () => new Sapphire(EPOCH),
          run: generateSapphire,
        },
      ],
    },
    {
      name: 'snowflake ids, 22-bit sequence',
      note: 'informative: onceflow with a layout that never runs out within a ms, so the cost per id shows',
      sides: [
        {
          id: 'onceflow',
          label: 'new Snowflake({ worker: 0, workerBits: 0, sequenceBits: 22 }).next()',
          prepare: () => new Snowflake({ worker: 0, workerBits: 0, sequenceBits: 22, epoch: EPOCH }),
          run: generateOnceflow,
        },
        {
          id: 'sapphire',
          label: 'new Snowflake(epoch).generate() of @sapphire/snowflake',
          prepare: () => new Sapphire(EPOCH),
          run: generateSapphire,
        },
      ],
    },
  ],
};
