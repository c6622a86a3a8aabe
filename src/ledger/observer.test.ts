import { afterEach, describe, expect, it, vi } from 'vitest';
import { StoreError } from '../core/errors.js';
import type { OnceflowEvent } from '../core/observer.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { createLedger } from './ledger.js';

const e = (n: number, signature = `s${n}`) => ({ owner: 'p1', signature, deltas: { coins: n }, order: n });

describe('ledger observer', () => {
  afterEach(() => vi.restoreAllMocks());

  it('sees every apply and resolve outcome, with the ledger name', async () => {
    const seen: OnceflowEvent[] = [];
    // 2 = the smallest window where a third entry pushes the first below the horizon.
    const ledger = createLedger({ capacity: 2, name: 'wallet', observer: (ev) => seen.push(ev) });
    for (const n of [1, 2, 3]) await ledger.apply(e(n));
    await ledger.apply(e(3)); // duplicate
    await ledger.apply(e(1)); // stale
    await ledger.resolve(e(1)); // duplicate: the journal holds it
    await ledger.resolve(e(0, 'late')); // applied
    expect(seen).toEqual([
      ...[1, 2, 3].map(() => ({
        part: 'ledger',
        type: 'apply',
        ledger: 'wallet',
        outcome: 'applied',
        owner: 'p1',
      })),
      { part: 'ledger', type: 'apply', ledger: 'wallet', outcome: 'duplicate', owner: 'p1' },
      { part: 'ledger', type: 'apply', ledger: 'wallet', outcome: 'stale', owner: 'p1' },
      { part: 'ledger', type: 'resolve', ledger: 'wallet', outcome: 'duplicate', owner: 'p1' },
      { part: 'ledger', type: 'resolve', ledger: 'wallet', outcome: 'applied', owner: 'p1' },
    ]);
  });

  it("sees resolve's unknown once retention dropped what could be the entry", async () => {
    const seen: OnceflowEvent[] = [];
    // A journal of 1 entry drops s1 and s2: whether a stale s0 was one of them is unprovable.
    const ledger = createLedger({
      store: memoryStore({ journal: { maxEntries: 1 } }),
      capacity: 1,
      observer: (ev) => seen.push(ev),
    });
    for (const n of [1, 2, 3]) await ledger.apply(e(n));
    expect((await ledger.resolve(e(1, 'x'))).outcome).toBe('unknown');
    expect(seen.at(-1)).toMatchObject({ type: 'resolve', outcome: 'unknown' });
  });

  it('sees a store failure as failed with its StoreError outcome, and the caller still gets the error', async () => {
    const seen: OnceflowEvent[] = [];
    const failure = new StoreError('ledgerApply', new Error('lost'), { outcome: 'unknown' });
    const store = wrapStore(memoryStore(), {
      ledgerApply: () => Promise.reject(failure),
      ledgerResolve: () =>
        Promise.reject(new StoreError('ledgerResolve', new Error('x'), { outcome: 'not-applied' })),
    });
    const ledger = createLedger({ store, capacity: 2, observer: (ev) => seen.push(ev) });
    await expect(ledger.apply(e(1))).rejects.toBe(failure);
    await expect(ledger.resolve(e(1))).rejects.toMatchObject({ code: 'ERR_STORE' });
    expect(seen).toEqual([
      {
        part: 'ledger',
        type: 'apply',
        ledger: 'default',
        outcome: 'failed',
        storeOutcome: 'unknown',
        owner: 'p1',
      },
      {
        part: 'ledger',
        type: 'resolve',
        ledger: 'default',
        outcome: 'failed',
        storeOutcome: 'not-applied',
        owner: 'p1',
      },
    ]);
  });

  it('reports nothing for input refused before the store', async () => {
    const seen: OnceflowEvent[] = [];
    const ledger = createLedger({ capacity: 2, observer: (ev) => seen.push(ev) });
    await expect(ledger.apply({ owner: '', signature: 's', deltas: {} })).rejects.toThrow();
    expect(seen).toEqual([]);
  });

  it('keeps applying when the observer throws, and reports it once', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const ledger = createLedger({
      capacity: 2,
      observer: () => {
        throw new Error('observer bug');
      },
    });
    expect((await ledger.apply(e(1))).outcome).toBe('applied');
    expect((await ledger.apply(e(1))).outcome).toBe('duplicate');
    expect(await ledger.balances('p1')).toEqual({ coins: 1n });
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('refuses an observer that is not a function', () => {
    expect(() => createLedger({ capacity: 2, observer: 'log' as never })).toThrow(/`observer`/);
  });
});
