// RunResult narrows on `outcome`, as the other results do (see results.test.ts): checked by
// `npm run typecheck` (every `expectTypeOf` and `@ts-expect-error` line) and run by vitest on
// real answers of every outcome.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { createIdempotency, idempotent, type RunResult } from '../../src/index.js';

/** Fails to compile when a switch over a union forgot a member. */
function exhaustive(value: never): never {
  throw new Error(`unexpected ${String(value)}`);
}

describe('RunResult', () => {
  it('is a union on outcome: value only when executed or replayed, retryAfterMs only when in progress', async () => {
    expectTypeOf<RunResult<number>['outcome']>().toEqualTypeOf<
      'executed' | 'replayed' | 'in-progress' | 'mismatch'
    >();
    const idem = createIdempotency();
    let release!: () => void;
    const held = idem.run({ key: 'held' }, () => new Promise<number>((r) => (release = () => r(0))));
    const results: RunResult<number>[] = [
      await idem.run({ key: 'k', payload: 1 }, () => 7),
      await idem.run({ key: 'k', payload: 1 }, () => 8),
      await idem.run({ key: 'held' }, () => 9),
      await idem.run({ key: 'k', payload: 2 }, () => 10),
    ];
    release();
    await held;
    expect(results.map((r) => r.outcome)).toEqual(['executed', 'replayed', 'in-progress', 'mismatch']);

    for (const r of results) {
      // @ts-expect-error: only executed and replayed answers have a value
      r.value;
      // @ts-expect-error: only an in-progress answer has retryAfterMs
      r.retryAfterMs;
      switch (r.outcome) {
        case 'executed':
        case 'replayed':
          expectTypeOf(r.value).toEqualTypeOf<number>();
          expect(r.value).toBe(7);
          break;
        case 'in-progress':
          expectTypeOf(r.retryAfterMs).toEqualTypeOf<number>();
          // @ts-expect-error: an in-progress answer has no value
          r.value;
          expect(r.retryAfterMs).toBeGreaterThan(0);
          break;
        case 'mismatch':
          // @ts-expect-error: a mismatch has no value
          r.value;
          expect(Object.keys(r)).toEqual(['outcome']);
          break;
        default:
          exhaustive(r);
      }
    }
  });

  it("idempotent() resolves fn's own type", async () => {
    const charge = idempotent(async (order: { id: string; cents: bigint }) => ({ charged: order.cents }), {
      key: (order) => order.id,
    });
    expectTypeOf(charge).toEqualTypeOf<
      (arg: { id: string; cents: bigint }) => Promise<{ charged: bigint }>
    >();
    expect(await charge({ id: 'o1', cents: 5n })).toEqual({ charged: 5n });
    // @ts-expect-error: the key function reads the argument's own type
    idempotent((n: number) => n, { key: (n) => n.toUpperCase() });
  });
});
