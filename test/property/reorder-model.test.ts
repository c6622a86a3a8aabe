import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Release, ReorderBuffer, type ReorderBufferOptions } from '../../src/windows/reorder-buffer.js';

// Random pushes, ticks and snapshot/restore round trips (through JSON) against invariants and
// against a twin buffer that is never restored, starting at 0, near 2^31, near 2^32 and next to
// 2^53 - 1 (where a sum of range sizes rounded once). Both overflow policies, fixed and adaptive
// timeouts, capacities 1..9.
type Op = { kind: 'push'; seq: number; dt: number } | { kind: 'tick'; dt: number } | { kind: 'snap' };
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('push' as const),
      seq: fc.integer({ min: 0, max: 40 }),
      dt: fc.integer({ min: 0, max: 30 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('tick' as const), dt: fc.integer({ min: 0, max: 80 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'snap' as const }) },
);

// A plain check for the per-number invariants (thousands per run): an expect each costs more than
// the buffer under test. A throw fails the property just as a failed expect does.
const check = (ok: boolean, message: string) => {
  if (!ok) throw new Error(message);
};

describe('ReorderBuffer model: exactly once, exact missing set, late flags, snapshot changes nothing', () => {
  for (const base of [0, 2 ** 31 - 3, 2 ** 32 - 7, Number.MAX_SAFE_INTEGER - 60]) {
    it(`from ${base}`, () => {
      fc.assert(
        fc.property(
          fc.array(op, { maxLength: 80 }),
          fc.integer({ min: 1, max: 9 }),
          fc.constantFrom('advance' as const, 'reject' as const),
          fc.constantFrom(50, 'adaptive' as const),
          (ops, capacity, overflow, gapTimeout) => {
            const options: ReorderBufferOptions = {
              next: base,
              capacity,
              overflow,
              gapTimeout,
              ...(gapTimeout === 'adaptive'
                ? { adaptive: { min: 1, max: 100, initial: 50, quantile: 0.5 } }
                : {}),
            };
            let a = new ReorderBuffer<number>(options);
            const twin = new ReorderBuffer<number>(options);
            let now = 0;
            const released = new Set<number>();
            const given = new Set<number>();
            const late = new Set<number>();
            const take = (rs: readonly Release<number>[]) => {
              for (const r of rs) {
                check(!released.has(r.seq), `released twice: ${r.seq}`);
                released.add(r.seq);
                check(r.item === r.seq * 10, `item ${r.item} released as ${r.seq}`);
                check(r.late === given.has(r.seq), `${r.seq} released with late: ${r.late}`);
                if (r.late) late.add(r.seq);
              }
            };
            const giveUp = (gaps: readonly { from: number; to: number }[]) => {
              for (const g of gaps) {
                for (let s = g.from; s <= g.to; s++) {
                  check(!(released.has(s) || given.has(s)), `gap over a known number: ${s}`);
                  given.add(s);
                }
              }
            };
            for (const o of ops) {
              if (o.kind === 'snap') {
                const saved = JSON.parse(JSON.stringify(a.snapshot()));
                a = new ReorderBuffer<number>(options);
                a.restore(saved);
                continue;
              }
              now += o.dt;
              if (o.kind === 'push') {
                const seq = base + o.seq;
                const r = a.push(seq, seq * 10, now);
                const t = twin.push(seq, seq * 10, now);
                expect(JSON.stringify([...r, r.outcome, r.gaps])).toBe(
                  JSON.stringify([...t, t.outcome, t.gaps]),
                );
                giveUp(r.gaps);
                take(r);
              } else {
                const r = a.tick(now);
                expect(JSON.stringify(r)).toBe(JSON.stringify(twin.tick(now)));
                giveUp(r.gaps);
                take(r.released);
              }
              for (let s = base; s < a.next; s++) {
                check(released.has(s) || given.has(s), `a number below next is neither: ${s}`);
              }
              const missing = a
                .missing()
                .flatMap((g) => Array.from({ length: g.to - g.from + 1 }, (_, k) => g.from + k));
              const want = [...given].filter((s) => !late.has(s)).sort((x, y) => x - y);
              expect(missing).toEqual(want);
              expect(a.stats().missing).toBe(want.length);
              expect(JSON.stringify(a.stats())).toBe(JSON.stringify(twin.stats()));
            }
          },
        ),
        { numRuns: 300 },
      );
    });
  }
});
