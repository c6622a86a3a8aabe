// ResolveResult narrows on `outcome`, as the other results do (see results.test.ts): checked by
// `npm run typecheck` (every `expectTypeOf` and `@ts-expect-error` line) and run by vitest.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { createLedger, type ResolveResult } from '../../src/index.js';
import type { LedgerResolveResult, ResolveOutcome } from '../../src/store/index.js';

describe('ResolveResult', () => {
  it('is a union on outcome: seq is a number when applied and absent otherwise', async () => {
    expectTypeOf<ResolveResult>().toEqualTypeOf<LedgerResolveResult>();
    expectTypeOf<ResolveResult['outcome']>().toEqualTypeOf<ResolveOutcome>();
    const ledger = createLedger({ capacity: 1 });
    const r = await ledger.resolve({ owner: 'p', signature: 's', deltas: { coins: 1 } });
    if (r.outcome === 'applied') {
      expectTypeOf(r.seq).toEqualTypeOf<number>();
      expect(r.seq).toBe(1);
    } else {
      // @ts-expect-error: only an applied answer has a seq
      r.seq;
      throw new Error(`expected applied, got ${r.outcome}`);
    }
    const again = await ledger.resolve({ owner: 'p', signature: 's', deltas: { coins: 1 } });
    expect(again.outcome).toBe('duplicate');
    if (again.outcome === 'duplicate') {
      // @ts-expect-error: a duplicate has no seq
      again.seq;
    }
    const unknown = { outcome: 'unknown', balances: {} } as Extract<ResolveResult, { outcome: 'unknown' }>;
    // @ts-expect-error: an unknown answer has no seq
    unknown.seq;
  });
});
