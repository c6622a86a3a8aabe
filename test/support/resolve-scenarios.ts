// Scenarios of `Ledger.resolve` that every store must pass, registered as vitest tests by the
// memory store's unit tests and by the Redis (standalone and Cluster) integration tests. Each
// scenario has one owner per ledger, where the memory store's per-ledger retention and Redis's
// per-owner retention drop the same entries.
import { expect, it } from 'vitest';
import { createLedger, type Ledger, type LedgerEntry } from '../../src/ledger/ledger.js';
import type { Store } from '../../src/store/store.js';
import { coded, rejected } from './thrown.js';

/** A store keeping the newest `keep` journal entries of the owner (every entry when undefined). */
export type StoreWith = (keep?: number) => Store;

let ledgers = 0;
const ledgerOn = (store: Store, capacity: number, horizon = true): Ledger =>
  createLedger({ store, capacity, horizon, name: `resolve-${process.pid}-${Date.now()}-${ledgers++}` });

const entry = (n: number, extra: Partial<LedgerEntry> = {}): LedgerEntry => ({
  owner: 'p1',
  signature: `s${n}`,
  deltas: { coins: n },
  order: n,
  ...extra,
});

/** Everything a resolve that answers `unknown` or `duplicate` must leave as it was. */
async function snapshot(ledger: Ledger) {
  return {
    balances: await ledger.balances('p1'),
    window: await ledger.window('p1'),
    journal: (await ledger.journal({ owner: 'p1' })).map(({ at: _at, ...rest }) => rest),
    totals: await ledger.totals('room'),
  };
}

export function resolveScenarios(storeWith: StoreWith): void {
  it('a stale repeat the journal holds is a duplicate and changes nothing', async () => {
    const ledger = ledgerOn(storeWith(), 2);
    for (const n of [1, 2, 3]) await ledger.apply(entry(n, { scope: 'room' }));
    expect((await ledger.apply(entry(1, { scope: 'room' }))).outcome).toBe('stale');
    const before = await snapshot(ledger);
    const r = await ledger.resolve(entry(1, { scope: 'room' }));
    expect(r).toEqual({ outcome: 'duplicate', balances: { coins: 6n } });
    expect(await snapshot(ledger)).toEqual(before);
  });

  it('a stale entry the whole journal does not hold is applied once, atomically, and is a duplicate after', async () => {
    const ledger = ledgerOn(storeWith(), 2);
    for (const n of [10, 20, 30]) await ledger.apply(entry(n, { scope: 'room' }));
    const late = entry(5, { scope: 'room', meta: { late: true } });
    expect((await ledger.apply(late)).outcome).toBe('stale');
    expect(await ledger.resolve(late)).toEqual({ outcome: 'applied', balances: { coins: 65n }, seq: 4 });
    // Booked as an apply books it: balances, scope total, journal, and the window as its newest.
    expect(await ledger.totals('room')).toEqual({ coins: 65n });
    const journal = await ledger.journal({ owner: 'p1' });
    expect(journal.map((e) => [e.seq, e.signature, e.order, e.meta])).toEqual([
      [1, 's10', 10, undefined],
      [2, 's20', 20, undefined],
      [3, 's30', 30, undefined],
      [4, 's5', 5, { late: true }],
    ]);
    expect(await ledger.window('p1')).toEqual({ signatures: ['s30', 's5'], horizon: 20 });
    expect((await ledger.apply(late)).outcome).toBe('duplicate');
    expect((await ledger.resolve(late)).outcome).toBe('duplicate');
    // Once it left the window, a repeat is stale again, and resolve finds it in the journal.
    await ledger.apply(entry(40));
    await ledger.apply(entry(50));
    expect((await ledger.apply(late)).outcome).toBe('stale');
    expect((await ledger.resolve(late)).outcome).toBe('duplicate');
    expect(await ledger.balances('p1')).toEqual({ coins: 155n });
  });

  it('an entry the window holds is a duplicate; a fresh one is applied as apply would', async () => {
    const ledger = ledgerOn(storeWith(), 4);
    await ledger.apply(entry(1));
    expect((await ledger.resolve(entry(1))).outcome).toBe('duplicate');
    expect(await ledger.resolve(entry(2))).toEqual({ outcome: 'applied', balances: { coins: 3n }, seq: 2 });
    expect(await ledger.resolve({ owner: 'p2', signature: 'x', deltas: { gems: 1 } })).toEqual({
      outcome: 'applied',
      balances: { gems: 1n },
      seq: 1,
    });
    expect((await ledger.apply(entry(2))).outcome).toBe('duplicate');
  });

  it('once retention dropped entries, an absent entry at or below the highest dropped order is unknown and changes nothing', async () => {
    const ledger = ledgerOn(storeWith(3), 2);
    for (const n of [1, 2, 3, 4, 5, 6]) await ledger.apply(entry(n, { scope: 'room' }));
    // Retained: s4, s5, s6; dropped s1..s3 (highest order 3). Window s5, s6, horizon 4.
    expect((await ledger.journal({ owner: 'p1' })).map((e) => e.signature)).toEqual(['s4', 's5', 's6']);
    const before = await snapshot(ledger);
    for (const late of [entry(1), entry(3), { ...entry(2), signature: 'never-seen' }]) {
      expect((await ledger.apply(late)).outcome).toBe('stale');
      expect(await ledger.resolve(late)).toEqual({ outcome: 'unknown', balances: { coins: 21n } });
    }
    expect(await snapshot(ledger)).toEqual(before);
    // s4 is stale but retained: a duplicate. An absent order 4 is above every dropped order: new.
    expect((await ledger.resolve(entry(4))).outcome).toBe('duplicate');
    const new4 = { ...entry(4), signature: 'new-4' };
    expect((await ledger.apply(new4)).outcome).toBe('stale');
    expect(await ledger.resolve(new4)).toEqual({ outcome: 'applied', balances: { coins: 25n }, seq: 7 });
    expect((await ledger.resolve(new4)).outcome).toBe('duplicate');
  });

  it('entries without an order: decidable until one without an order is dropped', async () => {
    const ledger = ledgerOn(storeWith(2), 1);
    const plain = (s: string) => ({ owner: 'p1', signature: s, deltas: { coins: 1 } });
    await ledger.apply(plain('a'));
    await ledger.apply(entry(5));
    // Nothing dropped: absence proves it.
    expect((await ledger.resolve(plain('b'))).outcome).toBe('applied');
    // Journal a, s5, b at retention 2: `a` (no order) was dropped.
    expect((await ledger.resolve(plain('a'))).outcome).toBe('unknown');
    expect((await ledger.resolve(plain('c'))).outcome).toBe('unknown');
    expect((await ledger.resolve(plain('b'))).outcome).toBe('duplicate');
    // No ordered entry was dropped: an ordered absent entry is still decidable, at any order.
    expect((await ledger.resolve(entry(1))).outcome).toBe('applied');
    expect(await ledger.balances('p1')).toEqual({ coins: 8n });
  });

  it('an ordered entry is decided above the dropped orders even when entries without an order were dropped', async () => {
    const ledger = ledgerOn(storeWith(1), 1);
    await ledger.apply(entry(3));
    await ledger.apply({ owner: 'p1', signature: 'plain', deltas: { coins: 1 } });
    await ledger.apply(entry(9));
    // Dropped: s3 (order 3) and `plain` (no order). Orders above 3 are decidable.
    expect((await ledger.resolve(entry(2))).outcome).toBe('unknown');
    expect((await ledger.resolve(entry(4))).outcome).toBe('applied');
    expect((await ledger.resolve({ owner: 'p1', signature: 'other', deltas: {} })).outcome).toBe('unknown');
  });

  it('with no journal kept, only the window settles anything once the owner booked an entry', async () => {
    const ledger = ledgerOn(storeWith(0), 1);
    expect((await ledger.resolve({ owner: 'p2', signature: 'x', deltas: {} })).outcome).toBe('applied');
    for (const n of [1, 2, 3]) await ledger.apply(entry(n));
    expect((await ledger.apply(entry(1))).outcome).toBe('stale');
    expect((await ledger.resolve(entry(1))).outcome).toBe('unknown');
    expect((await ledger.resolve({ ...entry(2), signature: 'x' })).outcome).toBe('unknown');
    expect((await ledger.resolve(entry(9))).outcome).toBe('unknown');
    // The window holds s3.
    expect((await ledger.resolve(entry(3))).outcome).toBe('duplicate');
    expect(await ledger.balances('p1')).toEqual({ coins: 6n });
    expect(await ledger.journal({ owner: 'p1' })).toEqual([]);
  });

  it('an entry resolve applied above the horizon raises it when evicted: a later repeat is stale, never applied twice', async () => {
    const ledger = ledgerOn(storeWith(1), 1);
    await ledger.apply(entry(1));
    await ledger.apply(entry(2)); // s1 dropped from the journal (keep 1), evicted from the window
    expect((await ledger.resolve(entry(7))).outcome).toBe('applied');
    await ledger.apply(entry(8));
    expect(await ledger.window('p1')).toEqual({ signatures: ['s8'], horizon: 7 });
    expect((await ledger.apply(entry(7))).outcome).toBe('stale');
    expect((await ledger.resolve(entry(7))).outcome).toBe('unknown');
    expect(await ledger.balances('p1')).toEqual({ coins: 18n });
  });

  it('with horizon off, resolve decides from the journal all the same', async () => {
    const ledger = ledgerOn(storeWith(), 1, false);
    await ledger.apply(entry(1));
    await ledger.apply(entry(2));
    expect((await ledger.resolve(entry(1))).outcome).toBe('duplicate');
    expect((await ledger.resolve(entry(0))).outcome).toBe('applied');
    expect(await ledger.window('p1')).toEqual({ signatures: ['s0'] });
  });

  it('bad input is the typed error apply gives, before anything changes', async () => {
    const ledger = ledgerOn(storeWith(), 2);
    await ledger.apply(entry(1));
    const before = await snapshot(ledger);
    for (const bad of [
      { owner: 'p1', signature: 'b', deltas: { coins: 1.5 } },
      { owner: 'p1', signature: '', deltas: {} },
      { owner: 'p1', signature: 'b', deltas: {}, order: 1.5 },
      { owner: 'p1', signature: 'b', deltas: {}, scope: '' },
      { signature: 'b', deltas: {} },
    ]) {
      const err = coded(await rejected(ledger.resolve(bad as never)));
      const same = coded(await rejected(ledger.apply(bad as never)));
      expect(err).toEqual(same);
      expect(err.code).toBe('ERR_INVALID_ARGUMENT');
    }
    expect(await snapshot(ledger)).toEqual(before);
  });
}
