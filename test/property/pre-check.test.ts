// A false positive of the pre-check never drops or delays an event (issue 28, DESIGN §3.12): a
// SeenFilter flooded until most never-seen ids answer "maybe", in front of `ledger.seen` (and of
// `idempotency.seen`), and a random at-least-once stream (repeats, reorders, concurrent
// deliveries) through the buffer layer of test/support/pre-check-replay.ts, compared with the same
// stream through the layer without a pre-check. The memory store is the reference; test/integration/redis-pre-check.test.ts runs
// the same replay on Redis.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createIdempotency,
  createLedger,
  type Idempotency,
  memoryStore,
  SeenFilter,
} from '../../src/index.js';
import {
  checkExactlyOnce,
  measuredFalsePositiveRate,
  type ReplayEvent,
  replay,
} from '../support/pre-check-replay.js';

// 3 owners, up to 24 events, each delivered 1 to 4 times, in any order.
const streamArb = fc
  .array(fc.record({ owner: fc.constantFrom('p1', 'p2', 'p3'), amount: fc.integer({ min: -50, max: 50 }) }), {
    minLength: 1,
    maxLength: 24,
  })
  .chain((raw) => {
    const events: ReplayEvent[] = raw.map((r, i) => ({ ...r, signature: `evt-${i}` }));
    return fc
      .tuple(
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: events.length, maxLength: events.length }),
        fc.integer({ min: 1, max: 4 }),
      )
      .chain(([times, concurrency]) => {
        const multiset = times.flatMap((t, id) => Array.from({ length: t }, () => id));
        return fc
          .shuffledSubarray(multiset, { minLength: multiset.length, maxLength: multiset.length })
          .map((deliveries) => ({ events, deliveries, concurrency }));
      });
  });

// Small generations at the widest rate: 64 ids at 50% is 96 bits and 1 hash, so the pair answers
// "maybe" for about half (just after a rotation) to 1 - 0.5^2 = 75% (both full) of never-seen
// ids, the most the rotation lets it reach; and it forgets a real event after about 64 to 128
// newer ids (the junk below pushes them out: false negatives too).
const flooded = () => {
  const filter = new SeenFilter({ expected: 64, falsePositiveRate: 0.5 });
  for (let i = 0; i < 1_000; i++) filter.add(`junk:${i}`);
  return filter;
};

describe('ledger pre-check: a flooded filter never drops or delays an event', () => {
  it('the flood makes most never-seen ids answer "maybe"', () => {
    const filter = flooded();
    expect(measuredFalsePositiveRate(filter, 10_000, 'probe')).toBeGreaterThan(0.45);
  });

  it('property: every event applied exactly once, by the delivery the plain path applies it with', async () => {
    let skipped = 0;
    let falsePositiveReads = 0;
    let forgotten = 0; // repeats the filter had forgotten: skipped reads that apply answered duplicate
    await fc.assert(
      fc.asyncProperty(streamArb, async ({ events, deliveries, concurrency }) => {
        // 24 >= the events of one owner: no repeat ever finds its signature evicted (no stale).
        const capacity = 24;
        const plainLedger = createLedger({ store: memoryStore(), capacity, horizon: false });
        const filter = flooded();
        const outcomes: string[] = [];
        const checked = createLedger({
          store: memoryStore(),
          capacity,
          horizon: false,
          preCheck: filter,
          observer: (e) => {
            if (e.part === 'ledger' && e.type === 'pre-check') outcomes.push(e.outcome);
          },
        });
        const flood = { filter, junkPerBatch: 8, prefix: 'more-junk' };
        const plain = await replay(plainLedger, events, deliveries, concurrency);
        const pre = await replay(checked, events, deliveries, concurrency, flood);
        expect(checkExactlyOnce(events, deliveries, concurrency, plain)).toBeUndefined();
        expect(checkExactlyOnce(events, deliveries, concurrency, pre)).toBeUndefined();
        // The same deliveries apply each event on both paths: none dropped, none delayed.
        const appliedAt = (fates: string[]) => fates.flatMap((f, at) => (f === 'applied' ? [at] : []));
        expect(appliedAt(pre.fates)).toEqual(appliedAt(plain.fates));
        // A delivery the pre-checked path dropped, the plain path dropped too (the store said seen).
        pre.fates.forEach((f, at) => {
          if (f === 'dropped') expect(plain.fates[at]).toBe('dropped');
        });
        for (const owner of ['p1', 'p2', 'p3']) {
          expect(await checked.balances(owner)).toEqual(await plainLedger.balances(owner));
          const journal = await checked.journal({ owner });
          expect(new Set(journal.map((j) => j.signature)).size).toBe(journal.length);
        }
        forgotten +=
          pre.fates.filter((f) => f === 'duplicate').length -
          plain.fates.filter((f) => f === 'duplicate').length;
        skipped += outcomes.filter((o) => o === 'skipped').length;
        falsePositiveReads += outcomes.filter((o) => o === 'read-unseen').length;
      }),
      { numRuns: 150 },
    );
    // The runs exercised both sides of the filter: reads it skipped, and false positives it read.
    expect(skipped).toBeGreaterThan(0);
    expect(falsePositiveReads).toBeGreaterThan(0);
    expect(forgotten).toBeGreaterThan(0);
  });
});

describe('idempotency pre-check: a flooded filter never drops or delays a call', () => {
  it('property: every key runs its function exactly once, by the delivery the plain path runs it with', async () => {
    let skipped = 0;
    let falsePositiveReads = 0;
    await fc.assert(
      fc.asyncProperty(streamArb, async ({ events, deliveries, concurrency }) => {
        // The buffer layer: seen → dropped; else run, which decides (executed once, then replayed).
        const layer = (idem: Idempotency) => {
          const runs: number[] = [];
          const fates: string[] = new Array(deliveries.length);
          const deliver = async (at: number) => {
            const id = deliveries[at] as number;
            const key = (events[id] as ReplayEvent).signature;
            if (await idem.seen(key)) {
              fates[at] = 'dropped';
              return;
            }
            const r = await idem.run({ key }, () => {
              runs.push(id);
              return id;
            });
            fates[at] = r.outcome;
          };
          return { runs, fates, deliver };
        };
        const filter = flooded();
        const outcomes: string[] = [];
        const plain = layer(createIdempotency({ store: memoryStore() }));
        const pre = layer(
          createIdempotency({
            store: memoryStore(),
            preCheck: filter,
            observer: (e) => {
              if (e.part === 'idempotency' && e.type === 'pre-check') outcomes.push(e.outcome);
            },
          }),
        );
        for (const [side, junk] of [
          [plain, 0],
          [pre, 8],
        ] as const) {
          for (let i = 0; i < deliveries.length; i += concurrency) {
            for (let j = 0; j < junk; j++) filter.add(`idem-junk:${i}:${j}`);
            const batch: Promise<void>[] = [];
            for (let at = i; at < Math.min(i + concurrency, deliveries.length); at++)
              batch.push(side.deliver(at));
            await Promise.all(batch);
          }
        }
        // Each event's function ran exactly once, and by the same delivery on both paths.
        expect([...pre.runs].sort((a, b) => a - b)).toEqual(events.map((_, id) => id));
        const executedAt = (fates: string[]) => fates.flatMap((f, at) => (f === 'executed' ? [at] : []));
        expect(executedAt(pre.fates)).toEqual(executedAt(plain.fates));
        pre.fates.forEach((f, at) => {
          if (f === 'dropped') expect(plain.fates[at]).toBe('dropped');
        });
        skipped += outcomes.filter((o) => o === 'skipped').length;
        falsePositiveReads += outcomes.filter((o) => o === 'read-unseen').length;
      }),
      { numRuns: 100 },
    );
    expect(skipped).toBeGreaterThan(0);
    expect(falsePositiveReads).toBeGreaterThan(0);
  });
});
