import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type GapRange,
  type Release,
  ReorderBuffer,
  type ReorderBufferOptions,
} from '../../src/windows/reorder-buffer.js';

/**
 * A delivery order of `0..n-1` in which no item moves more than `d` places: sort by `i + r_i`
 * with `r_i` in [0, d]. When item s arrives, every number not arrived yet is > s - d - 1, so a
 * buffer of capacity d + 1 always has room (the derivation the tests rely on).
 */
const boundedPermutation = (maxN: number, maxD: number) =>
  fc
    .record({ n: fc.integer({ min: 0, max: maxN }), d: fc.integer({ min: 0, max: maxD }) })
    .chain(({ n, d }) =>
      fc.array(fc.integer({ min: 0, max: d }), { minLength: n, maxLength: n }).map((r) => ({
        d,
        order: r
          .map((ri, i) => ({ i, key: i + ri }))
          .sort((a, b) => a.key - b.key || a.i - b.i)
          .map((x) => x.i),
      })),
    );

const seqs = (rs: readonly Release<unknown>[]) => rs.map((r) => r.seq);
const expand = (gaps: readonly GapRange[]) =>
  gaps.flatMap((g) => Array.from({ length: g.to - g.from + 1 }, (_, k) => g.from + k));

describe('ReorderBuffer (fast-check)', () => {
  it('any permutation with bounded displacement comes out in order, complete, each item once', () => {
    fc.assert(
      fc.property(boundedPermutation(300, 40), fc.nat(20), ({ d, order }, extra) => {
        const buffer = new ReorderBuffer<string>({ capacity: d + 1 + extra, gapTimeout: '1m' });
        const out: Release<string>[] = [];
        // Each push's outcome and gaps, collected and asserted once: an expect per push costs
        // more than the buffer under test.
        const got: unknown[] = [];
        const want: unknown[] = [];
        for (const [k, seq] of order.entries()) {
          const r = buffer.push(seq, `item-${seq}`, k);
          got.push([seq, r.outcome, r.gaps]);
          want.push([seq, seq === out.length ? 'released' : 'buffered', []]);
          out.push(...r);
        }
        expect(got).toEqual(want);
        expect(seqs(out)).toEqual(order.map((_, i) => i));
        expect(out.every((r) => r.item === `item-${r.seq}` && !r.late)).toBe(true);
        expect(buffer.buffered).toBe(0);
      }),
    );
  });

  it('with drops, the gaps reported after the timeout are exactly the dropped numbers; late arrivals of them come out once, flagged', () => {
    fc.assert(
      fc.property(
        boundedPermutation(200, 20),
        fc.array(fc.boolean(), { maxLength: 200 }),
        fc.array(fc.nat(), { maxLength: 80 }),
        ({ d, order }, dropFlags, lateOrder) => {
          const dropped = new Set(order.filter((s) => dropFlags[s] === true));
          const delivered = order.filter((s) => !dropped.has(s));
          // One delivery per ms. Item s arrives at a position in [s - d, s + d], so a delayed (not
          // dropped) number m arrives at most 2d - 1 ms after the first item behind it (m + 1 moved
          // d early, m moved d late): a timeout of 2d + 2 ms never gives up on it. Ticks run after
          // every push.
          const timeout = 2 * d + 2;
          const buffer = new ReorderBuffer<number>({ capacity: d + 1, gapTimeout: timeout });
          const released: Release<number>[] = [];
          const gaps: GapRange[] = [];
          let t = 0;
          for (const seq of delivered) {
            const pushed = buffer.push(seq, seq, t);
            released.push(...pushed);
            gaps.push(...pushed.gaps); // capacity d + 1 with a drop can overflow: the hole is given up
            const tick = buffer.tick(t);
            released.push(...tick.released);
            gaps.push(...tick.gaps);
            t++;
          }
          const end = buffer.tick(t + timeout);
          released.push(...end.released);
          gaps.push(...end.gaps);

          // A dropped number is detectable only when something behind it was delivered.
          const highest = delivered.length === 0 ? -1 : Math.max(...delivered);
          const detectable = [...dropped].filter((s) => s < highest).sort((a, b) => a - b);
          expect(expand(gaps)).toEqual(detectable);
          expect(buffer.missing().flatMap((g) => expand([g]))).toEqual(detectable);
          expect(seqs(released)).toEqual([...delivered].sort((a, b) => a - b));
          expect(released.some((r) => r.late)).toBe(false);

          // The compensation channel re-sends the dropped numbers, in any order, some twice.
          const resend = [...detectable, ...lateOrder.map((k) => detectable[k % (detectable.length || 1)])]
            .filter((s): s is number => s !== undefined)
            .sort((a, b) => ((a * 7919) % 101) - ((b * 7919) % 101));
          const late: Release<number>[] = [];
          for (const seq of resend) {
            const r = buffer.push(seq, seq, ++t);
            expect(r.outcome).toBe(late.some((l) => l.seq === seq) ? 'duplicate' : 'late');
            late.push(...r);
          }
          expect(late.every((r) => r.late)).toBe(true);
          expect(seqs(late).sort((a, b) => a - b)).toEqual(detectable);
          expect(buffer.missing()).toEqual([]);
          // Anything delivered before is a duplicate now, never released twice.
          for (const seq of delivered) expect(buffer.push(seq, seq, ++t).outcome).toBe('duplicate');
        },
      ),
    );
  });

  type Op = { kind: 'push'; seq: number } | { kind: 'tick'; dt: number } | { kind: 'wait'; dt: number };
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 60 }).map((seq) => ({ kind: 'push' as const, seq })) },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: 30 }).map((dt) => ({ kind: 'tick' as const, dt })) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 10 }).map((dt) => ({ kind: 'wait' as const, dt })) },
  );
  const optionsArb: fc.Arbitrary<ReorderBufferOptions> = fc.record({
    capacity: fc.integer({ min: 1, max: 16 }),
    gapTimeout: fc.oneof(fc.constant('adaptive' as const), fc.integer({ min: 0, max: 40 })),
    overflow: fc.constantFrom('advance' as const, 'reject' as const),
    maxMissing: fc.integer({ min: 0, max: 30 }),
  });

  function run(options: ReorderBufferOptions, ops: Op[], restoreAt?: number) {
    const make = () =>
      new ReorderBuffer<string>(
        options.gapTimeout === 'adaptive'
          ? { ...options, adaptive: { min: 1, max: 50, initial: 5, quantile: 0.9, factor: 1.5 } }
          : options,
      );
    let buffer = make();
    let t = 0;
    const trace: unknown[] = [];
    for (const [i, op] of ops.entries()) {
      if (i === restoreAt) {
        const saved = JSON.parse(JSON.stringify(buffer.snapshot()));
        buffer = make();
        buffer.restore(saved);
      }
      if (op.kind === 'push') {
        const r = buffer.push(op.seq, `v${op.seq}`, t);
        trace.push([r.outcome, [...r], r.gaps]);
      } else if (op.kind === 'tick') {
        t += op.dt;
        trace.push(buffer.tick(t));
      } else t += op.dt;
    }
    trace.push(buffer.stats(), buffer.missing());
    return trace;
  }

  it('duplicates never come out twice, in-order releases only move forward, late only for reported gaps', () => {
    fc.assert(
      fc.property(optionsArb, fc.array(opArb, { maxLength: 200 }), (options, ops) => {
        const trace = run(options, ops);
        const released = new Set<number>();
        const reported = new Set<number>();
        let lastInOrder = -1;
        const take = (rs: Release<string>[], gaps: readonly GapRange[]) => {
          for (const s of expand(gaps)) {
            expect(reported.has(s)).toBe(false);
            expect(released.has(s)).toBe(false);
            reported.add(s);
          }
          for (const r of rs) {
            expect(released.has(r.seq)).toBe(false);
            released.add(r.seq);
            expect(r.item).toBe(`v${r.seq}`);
            if (r.late) expect(reported.has(r.seq)).toBe(true);
            else {
              expect(r.seq).toBeGreaterThan(lastInOrder);
              lastInOrder = r.seq;
            }
          }
        };
        for (const step of trace.slice(0, -2)) {
          if (Array.isArray(step)) take(step[1] as Release<string>[], step[2] as GapRange[]);
          else take((step as { released: Release<string>[] }).released, (step as { gaps: GapRange[] }).gaps);
        }
      }),
    );
  });

  it('snapshot and restore (through JSON) at any point change nothing in the output', () => {
    fc.assert(
      fc.property(optionsArb, fc.array(opArb, { maxLength: 150 }), fc.nat(), (options, ops, at) => {
        const restoreAt = ops.length === 0 ? 0 : at % ops.length;
        expect(run(options, ops, restoreAt)).toEqual(run(options, ops));
      }),
    );
  });
});
