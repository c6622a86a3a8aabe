import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLedger, defineSignature, memoryStore } from '../../src/index.js';
import {
  type Delivery,
  interleave,
  orderCapacity,
  playerLog,
  requiredCapacity,
  roundPlan,
} from './settlement-log.js';

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

/** The unbounded reference model: every signature ever applied, per owner, forever. */
function model(log: Delivery[]) {
  const seen = new Map<string, Set<string>>();
  const balances = new Map<string, bigint>();
  const rooms = new Map<string, bigint>();
  const outcomes = log.map((d) => {
    let set = seen.get(d.player);
    if (!set) seen.set(d.player, (set = new Set()));
    if (set.has(d.signature)) return 'duplicate';
    set.add(d.signature);
    balances.set(d.player, (balances.get(d.player) ?? 0n) + BigInt(d.net));
    rooms.set(d.room, (rooms.get(d.room) ?? 0n) + BigInt(d.net));
    return 'applied';
  });
  return { outcomes, balances, rooms };
}

async function replay(log: Delivery[], capacity: number, withOrder = true) {
  const ledger = createLedger({ store: memoryStore(), capacity });
  const outcomes: string[] = [];
  for (const d of log) {
    const entry = { owner: d.player, signature: d.signature, deltas: { coins: d.net }, scope: d.room };
    const r = await ledger.apply(withOrder ? { ...entry, order: d.order } : entry);
    outcomes.push(r.outcome);
  }
  return { ledger, outcomes };
}

const logArb = (overlap: 1 | 2) =>
  fc
    .record({
      players: fc.array(fc.array(roundPlan, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 }),
      picks: fc.array(fc.nat(), { minLength: 1, maxLength: 50 }),
    })
    .map(({ players, picks }) =>
      interleave(
        players.map((plans, i) => playerLog(`p${i}`, plans, overlap, settlement)),
        picks,
      ),
    );

describe('ledger on the memory store against an unbounded model', () => {
  it('overlap 1 (DESIGN §3.2 rules a and b): capacity 4 suffices, outcomes equal the model', async () => {
    await fc.assert(
      fc.asyncProperty(logArb(1), async (log) => {
        // The generator keeps the bound: the log itself never needs more than 4.
        expect(requiredCapacity(log)).toBeLessThanOrEqual(4);
        // ... nor, with orders, more than 4 for the horizon (no first delivery comes in stale).
        expect(orderCapacity(log)).toBeLessThanOrEqual(4);
        // 4 = 2 settlements per round x 2 rounds that can overlap.
        const { ledger, outcomes } = await replay(log, 4);
        const m = model(log);
        expect(outcomes).toEqual(m.outcomes);
        for (const [player, balance] of m.balances) {
          expect(await ledger.balances(player)).toEqual({ coins: balance });
        }
        for (const [room, total] of m.rooms) expect(await ledger.totals(room)).toEqual({ coins: total });
      }),
      { numRuns: 300 },
    );
  });

  it('overlap 2 (a final may land after the next instant): capacity 5 suffices', async () => {
    await fc.assert(
      fc.asyncProperty(logArb(2), async (log) => {
        expect(requiredCapacity(log)).toBeLessThanOrEqual(5);
        expect(orderCapacity(log)).toBeLessThanOrEqual(5);
        const { outcomes } = await replay(log, 5);
        expect(outcomes).toEqual(model(log).outcomes);
      }),
      { numRuns: 300 },
    );
  });

  it('both sides of the bound: capacity 3 breaks overlap-1 logs, capacity 4 breaks overlap-2 logs', async () => {
    // fc.check returns the first counterexample: the bound is tight, not merely sufficient.
    for (const [overlap, capacity] of [
      [1, 3],
      [2, 4],
    ] as const) {
      const result = await fc.check(
        fc.asyncProperty(logArb(overlap), async (log) => {
          const { outcomes } = await replay(log, capacity, false);
          return JSON.stringify(outcomes) === JSON.stringify(model(log).outcomes);
        }),
        { numRuns: 500, seed: 42 },
      );
      expect(result.failed, `capacity ${capacity} with overlap ${overlap}`).toBe(true);
    }
  });

  it('bound violated, orders given: never a second applied, only stale; balances never doubled', async () => {
    await fc.assert(
      fc.asyncProperty(logArb(2), fc.integer({ min: 1, max: 4 }), async (log, capacity) => {
        const { ledger, outcomes } = await replay(log, capacity);
        const m = model(log);
        const applied = new Set<string>();
        let sum = new Map<string, bigint>();
        // Collected, then asserted once: an expect per delivery costs more than the replay itself.
        const wrong: string[] = [];
        for (const [i, outcome] of outcomes.entries()) {
          const d = log[i] as Delivery;
          const key = `${d.player}/${d.signature}`;
          const want = m.outcomes[i];
          if (outcome === 'applied') {
            if (applied.has(key)) wrong.push(`${i}: ${key} applied a second time`);
            if (want !== 'applied') wrong.push(`${i}: ${key} applied, the model says ${want}`);
            applied.add(key);
            sum = sum.set(d.player, (sum.get(d.player) ?? 0n) + BigInt(d.net));
          } else if (want === 'duplicate' && outcome !== 'duplicate' && outcome !== 'stale') {
            wrong.push(`${i}: ${key} ${outcome}, the model says duplicate`);
          }
          // A first delivery may turn stale when the window is too small (its order is below what
          // was evicted): it goes to reconciliation instead. Money is then held, never doubled.
          if (want === 'applied' && outcome !== 'applied' && outcome !== 'stale') {
            wrong.push(`${i}: ${key} ${outcome}, the model says applied`);
          }
        }
        expect(wrong).toEqual([]);
        // Exact when the window covers both the repeats and, with orders, the first deliveries
        // that arrive below an order admitted before them (else they may be `stale`, as above).
        if (capacity >= Math.max(requiredCapacity(log), orderCapacity(log)))
          expect(outcomes).toEqual(m.outcomes);
        for (const [player, balance] of sum)
          expect(await ledger.balances(player)).toEqual({ coins: balance });
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary logs: any capacity at least the measured need reproduces the model exactly', async () => {
    const arb = fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 60 });
    await fc.assert(
      fc.asyncProperty(arb, fc.integer({ min: 1, max: 12 }), async (ids, capacity) => {
        // Orders by first appearance: the first time an id shows up it gets the next order.
        const rank = new Map<number, number>();
        const log: Delivery[] = ids.map((id) => {
          if (!rank.has(id)) rank.set(id, rank.size);
          const signature = `s${id}`;
          return {
            player: 'p',
            room: 'r',
            round: id,
            final: false,
            net: id + 1,
            order: rank.get(id) as number,
            signature,
          };
        });
        const need = requiredCapacity(log);
        const { outcomes } = await replay(log, capacity);
        const m = model(log).outcomes;
        if (capacity >= need) expect(outcomes).toEqual(m);
        // Whatever the capacity: no signature is applied twice.
        const applied = log.filter((_, i) => outcomes[i] === 'applied').map((d) => d.signature);
        expect(new Set(applied).size).toBe(applied.length);
      }),
      { numRuns: 500 },
    );
  });
});
