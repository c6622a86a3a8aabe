import { describe, expect, it } from 'vitest';
import { resolveScenarios } from '../../test/support/resolve-scenarios.js';
import { coded, rejected } from '../../test/support/thrown.js';
import { LIMITS } from '../core/limits.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { createLedger } from './ledger.js';

describe('Ledger.resolve on the memory store', () => {
  resolveScenarios((keep) => memoryStore({ journal: { maxEntries: keep ?? Number.POSITIVE_INFINITY } }));

  it("retention is per ledger: other owners' applies drop an owner's entries, and its resolve knows it", async () => {
    const ledger = createLedger({ store: memoryStore({ journal: { maxEntries: 3 } }), capacity: 1 });
    await ledger.apply({ owner: 'p1', signature: 'a', deltas: { coins: 1 }, order: 1 });
    await ledger.apply({ owner: 'p1', signature: 'b', deltas: { coins: 1 }, order: 2 });
    // Before p2's applies: nothing of p1 dropped, so an absent order 1 is new.
    const late = { owner: 'p1', signature: 'late', deltas: { coins: 1 }, order: 1 };
    const other = { owner: 'p1', signature: 'other', deltas: { coins: 1 }, order: 1 };
    expect((await ledger.apply(late)).outcome).toBe('stale');
    for (const n of [1, 2, 3]) await ledger.apply({ owner: 'p2', signature: `q${n}`, deltas: {} });
    // p2's three entries pushed out both of p1's.
    expect((await ledger.journal({})).map((e) => e.signature)).toEqual(['q1', 'q2', 'q3']);
    // Nothing of p2 was dropped: absence proves its entry new (booking it drops q1).
    expect((await ledger.resolve({ owner: 'p2', signature: 'q0', deltas: {} })).outcome).toBe('applied');
    expect((await ledger.resolve({ owner: 'p2', signature: 'q9', deltas: {} })).outcome).toBe('unknown');
    // p1 lost orders 1 and 2: at or below 2 nothing is provable, above it is.
    expect((await ledger.resolve(late)).outcome).toBe('unknown');
    expect((await ledger.resolve(other)).outcome).toBe('unknown');
    expect((await ledger.resolve({ ...late, signature: 'x', order: 3 })).outcome).toBe('applied');
    expect(await ledger.balances('p1')).toEqual({ coins: 3n });
  });

  it('a store without ledgerResolve: resolve rejects with a typed error naming the store', async () => {
    const ledger = createLedger({
      store: wrapStore(memoryStore(), { ledgerResolve: undefined }),
      capacity: 2,
    });
    const err = coded(await rejected(ledger.resolve({ owner: 'p', signature: 's', deltas: {} })));
    expect(err.code).toBe('ERR_INVALID_OPTION');
    expect(err.message).toContain('`store`');
    // Invalid input is still named first.
    expect(
      coded(await rejected(ledger.resolve({ owner: '', signature: 's', deltas: {} }))).message,
    ).toContain('`owner`');
  });

  it('the memory store called directly: a command it cannot book whole changes nothing', async () => {
    let broken = false;
    const store = memoryStore({
      clock: {
        now: () => {
          if (broken) throw new Error('clock gone');
          return 0;
        },
      },
    });
    const base = { ledger: 'L', capacity: 4, horizon: true, owner: 'p' } as const;
    const bad = coded(
      await rejected(
        store.ledgerResolve({
          ...base,
          signature: 's1',
          deltas: [
            ['a', 1n],
            ['a', 2n],
          ],
        }),
      ),
    );
    expect(bad.code).toBe('ERR_INVALID_ARGUMENT');
    broken = true;
    const clock = coded(
      await rejected(store.ledgerResolve({ ...base, signature: 's1', deltas: [['a', 1n]] })),
    );
    expect(clock.code).toBe('ERR_STORE');
    expect(clock.message).toContain('ledgerResolve');
    expect(await store.ledgerBalances('L', 'p')).toEqual({});
    expect((await store.ledgerWindow('L', 'p')).signatures).toEqual([]);
    broken = false;
    expect((await store.ledgerResolve({ ...base, signature: 's1', deltas: [['a', 1n]] })).outcome).toBe(
      'applied',
    );
  });

  it('input over the bounds is refused before any store call, as for apply', async () => {
    const base = memoryStore();
    let calls = 0;
    const store = wrapStore(base, {
      ledgerResolve: (cmd) => {
        calls++;
        return base.ledgerResolve(cmd);
      },
    });
    const ledger = createLedger({ store, capacity: 2 });
    const long = 'x'.repeat(LIMITS.signatureBytes + 1);
    const err = coded(await rejected(ledger.resolve({ owner: 'p', signature: long, deltas: {} })));
    expect(err.code).toBe('ERR_INVALID_ARGUMENT');
    expect(err.message).toContain('`signature`');
    expect(calls).toBe(0);
    expect((await ledger.resolve({ owner: 'p', signature: long.slice(1), deltas: {} })).outcome).toBe(
      'applied',
    );
    expect(calls).toBe(1);
  });
});
