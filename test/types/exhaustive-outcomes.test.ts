// Every result union has one member per outcome, so a chain of `if` checks (not only a `switch`
// with shared cases) narrows down to `never` once each outcome is handled. Checked by
// `npm run typecheck` (a forgotten or merged member fails to compile at `exhaustive(r)`) and run
// by vitest against real answers of every outcome.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { type ApplyResult, createLedger, type ResolveResult } from '../../src/index.js';

/** Fails to compile when the checks before it forgot a member of the union. */
function exhaustive(value: never): never {
  throw new Error(`unexpected ${JSON.stringify(value)}`);
}

function describeApply(r: ApplyResult): string {
  if (r.outcome === 'applied') return `applied #${r.seq}`;
  if (r.outcome === 'duplicate') return 'duplicate';
  if (r.outcome === 'stale') return 'stale';
  return exhaustive(r);
}

function describeResolve(r: ResolveResult): string {
  if (r.outcome === 'applied') return `applied #${r.seq}`;
  if (r.outcome === 'duplicate') return 'duplicate';
  if (r.outcome === 'unknown') return 'unknown';
  return exhaustive(r);
}

describe('ledger results: one member per outcome', () => {
  it('an if-chain over apply outcomes ends in a never check', async () => {
    expectTypeOf<Extract<ApplyResult, { outcome: 'duplicate' }>['outcome']>().toEqualTypeOf<'duplicate'>();
    expectTypeOf<Extract<ApplyResult, { outcome: 'stale' }>['outcome']>().toEqualTypeOf<'stale'>();
    // 1 = one signature in flight per owner here; s1 leaves the window at s2 (horizon 1).
    const ledger = createLedger({ capacity: 1 });
    const entry = { owner: 'p1', signature: 's1', deltas: { coins: 5 }, order: 1 };
    const results = [
      await ledger.apply(entry),
      await ledger.apply(entry),
      await ledger.apply({ ...entry, signature: 's2', order: 2 }),
      await ledger.apply({ ...entry, signature: 's0', order: 0 }),
    ];
    expect(results.map(describeApply)).toEqual(['applied #1', 'duplicate', 'applied #2', 'stale']);
    // The runtime shapes are unchanged: no seq on an answer that wrote nothing.
    expect(results.map((r) => Object.keys(r).sort())).toEqual([
      ['balances', 'outcome', 'seq'],
      ['balances', 'outcome'],
      ['balances', 'outcome', 'seq'],
      ['balances', 'outcome'],
    ]);
  });

  it('an if-chain over resolve outcomes ends in a never check', async () => {
    const ledger = createLedger({ capacity: 1 });
    const entry = { owner: 'p1', signature: 's1', deltas: { coins: 5 } };
    const applied = await ledger.resolve(entry);
    const duplicate = await ledger.resolve(entry);
    expect([applied, duplicate].map(describeResolve)).toEqual(['applied #1', 'duplicate']);
    expect(describeResolve({ outcome: 'unknown', balances: {} })).toBe('unknown');
  });
});
