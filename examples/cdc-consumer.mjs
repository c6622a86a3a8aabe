// A change-data-capture consumer: a replica of a `users` table fed by a change stream that repeats
// events, delivers them out of order and loses some. Four layers, as in the seeds:
//   1. dedup    a SignatureWindow drops repeats at the transport edge (most never reach the buffer);
//   2. reorder  a timer-driven ReorderBuffer puts the stream back in LSN order and gives up on holes;
//   3. compensation  the holes go to a compensator, which re-requests them from the source on its
//               own lane (bounded concurrency, retries with backoff), and cancels what came late;
//   4. apply    each change is an upsert through a VersionGate: an older row version never
//               overwrites a newer one, so late and repeated changes cannot move a row back.
// At the end the replica equals the source table, and every change was applied at most once.
//
// Run it after `npm run build`: `node examples/cdc-consumer.mjs`.
import assert from 'node:assert/strict';
import {
  createCompensator,
  createReorderer,
  defineSignature,
  memoryStore,
  SignatureWindow,
  VersionGate,
} from 'onceflow';

// --- The source: a change log of a `users` table (LSN = position in the log) -------------------
let seed = 2024;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const CHANGES = 2000;
const USERS = 50;
const table = new Map(); // the source table: key -> { version, row }
const log = [];
for (let lsn = 0; lsn < CHANGES; lsn++) {
  const key = `user-${Math.floor(random() * USERS)}`;
  const version = (table.get(key)?.version ?? 0) + 1;
  const row = { name: key, credits: Math.floor(random() * 1000), version };
  table.set(key, { version, row });
  log.push({ lsn, key, version, row });
}
// The stream ends with a heartbeat carrying the source's position, as CDC streams do: without it a
// change lost at the very end would leave no later event to reveal the hole.
const HEARTBEAT = { lsn: CHANGES, heartbeat: true };

// --- The transport: at-least-once, out of order (up to 40 places), 3% lost ----------------------
const MAX_DISPLACEMENT = 40;
const deliveries = [];
for (const change of [...log, HEARTBEAT]) {
  if (!change.heartbeat && random() < 0.03) continue; // lost
  const at = change.lsn + random() * MAX_DISPLACEMENT;
  deliveries.push({ at, change });
  if (random() < 0.1) deliveries.push({ at: at + random() * MAX_DISPLACEMENT, change }); // repeated
}
deliveries.sort((a, b) => a.at - b.at);

// --- The consumer --------------------------------------------------------------------------------
const store = memoryStore();
const replica = new VersionGate({ store, name: 'replica.users' });
const changeId = defineSignature([
  ['table', 'string'],
  ['lsn', 'int'],
]);
// 81: a repeat arrives at most 40 places after its original, which itself is at most 40 places
// from its position; fewer than 2 x 40 + 1 = 81 distinct others are first seen in between, so a
// FIFO window of 81 never lets a repeat through (DESIGN §3.2). Derived, not padded: a slower link
// changes MAX_DISPLACEMENT, and the capacity with it.
const dedup = new SignatureWindow({ capacity: 2 * MAX_DISPLACEMENT + 1 });
const counts = { delivered: 0, repeatsDropped: 0, duplicates: 0, late: 0, applied: 0, stale: 0, gaps: 0 };
const asked = [];
let failFirstRequest = true;

const compensator = createCompensator({
  concurrency: 2,
  retries: 3,
  backoff: { initial: '5ms', max: '50ms' },
  // The source re-sends a range on request (a CDC connector's snapshot of those LSNs). The first
  // request fails, as a busy source would: the compensator retries it.
  request: async (range) => {
    asked.push(range);
    if (failFirstRequest) {
      failFirstRequest = false;
      throw new Error('source busy');
    }
    setTimeout(() => {
      for (let lsn = range.from; lsn <= range.to; lsn++) receive(log[lsn], true);
    }, 2);
  },
  onGiveUp: (range, error) => {
    throw new Error(`gave up on LSNs ${range.from}..${range.to}: ${error}`);
  },
});

const consumer = await createReorderer({
  next: 0,
  // 64 > the largest displacement (40): an in-order event never overflows the window.
  capacity: 64,
  gapTimeout: 'adaptive',
  adaptive: { min: '20ms', max: '200ms', initial: '50ms' },
  checkpoint: { store, name: 'cdc:public.users', every: 100 },
  onGap: (gap) => {
    counts.gaps += gap.to - gap.from + 1;
    compensator.add(gap);
  },
  onRelease: async ({ item, late }) => {
    if (item.heartbeat) return;
    if (late) counts.late++;
    const { outcome } = await replica.upsert(item.key, item.version, item.row);
    counts[outcome === 'applied' ? 'applied' : 'stale']++;
  },
});

// `recovered`: re-sent on the compensator's request (pushRecovered). The adaptive gap timeout does not learn from
// those (their delay is the compensation's, not the stream's).
function receive(change, recovered = false) {
  counts.delivered++;
  if (dedup.admit(changeId({ table: 'public.users', lsn: change.lsn })) === 'duplicate') {
    counts.repeatsDropped++;
    return;
  }
  const result = recovered ? consumer.pushRecovered(change.lsn, change) : consumer.push(change.lsn, change);
  if (result.outcome === 'duplicate') counts.duplicates++;
  if (result.outcome === 'late') compensator.fill(change.lsn);
}

// Deliver the stream over time (a few events per millisecond), then wait for compensation.
for (const [i, { change }] of deliveries.entries()) {
  receive(change);
  if (i % 20 === 19) await new Promise((r) => setTimeout(r, 1));
}
while (consumer.buffer.buffered > 0 || consumer.buffer.missing().length > 0) {
  await new Promise((r) => setTimeout(r, 10));
}
await compensator.idle();
await consumer.close();

// --- The check: the replica is the source table ----------------------------------------------
for (const [key, { version, row }] of table) {
  assert.deepEqual(await replica.get(key), { version: BigInt(version), value: row }, key);
}
const stats = consumer.buffer.stats();
console.log(
  `${CHANGES} changes, ${deliveries.length} deliveries: ${counts.repeatsDropped} repeats dropped by the dedup window, ` +
    `${counts.duplicates} duplicates by the reorder buffer; ${counts.gaps} LSNs given up on and re-requested in ` +
    `${asked.length} requests (one failed and was retried), ${counts.late} came late; ${counts.applied} upserts applied, ` +
    `${counts.stale} stale (an older version after a newer one); adaptive gap timeout ${stats.timeoutMs} ms`,
);
console.log(`replica matches source: ${table.size} rows, checkpoint at LSN ${stats.next}`);
