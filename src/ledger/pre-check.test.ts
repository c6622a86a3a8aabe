import { describe, expect, it } from 'vitest';
import { isOnceflowError } from '../core/errors.js';
import type { OnceflowEvent } from '../core/observer.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { SeenFilter } from '../windows/seen-filter.js';
import { createLedger } from './ledger.js';
import { preCheckId } from './pre-check.js';

// A memory store that counts its window reads (the read a pre-check may skip).
function counted(base: Store = memoryStore()) {
  const reads = { n: 0 };
  const store = wrapStore(base, {
    ledgerWindow: (ledger, owner) => {
      reads.n++;
      return base.ledgerWindow(ledger, owner);
    },
  });
  return { store, reads, base };
}

const rejection = async (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => 'resolved',
    (e) => e,
  );

const entry = (n: number, owner = 'p1') => ({ owner, signature: `s${n}`, deltas: { coins: n } });

describe('ledger.seen without a pre-check', () => {
  it('reads the window every time: true iff it holds the signature', async () => {
    const { store, reads } = counted();
    // 2 = the smallest window where a third entry evicts the first.
    const ledger = createLedger({ store, capacity: 2, horizon: false });
    expect(await ledger.seen(entry(1))).toBe(false);
    await ledger.apply(entry(1));
    expect(await ledger.seen(entry(1))).toBe(true);
    expect(await ledger.seen(entry(1, 'p2'))).toBe(false);
    await ledger.apply(entry(2));
    await ledger.apply(entry(3)); // s1 leaves the window
    expect(await ledger.seen(entry(1))).toBe(false);
    expect(reads.n).toBe(4);
  });
});

describe('ledger.seen with a pre-check', () => {
  it('never seen here: false without a store read; maybe seen: the store decides', async () => {
    const { store, reads } = counted();
    const seen: OnceflowEvent[] = [];
    const ledger = createLedger({
      store,
      capacity: 4,
      name: 'wallet',
      preCheck: new SeenFilter({ expected: 1_000 }),
      observer: (e) => seen.push(e),
    });
    expect(await ledger.seen(entry(1))).toBe(false);
    expect(reads.n).toBe(0);
    await ledger.apply(entry(1));
    expect(await ledger.seen(entry(1))).toBe(true);
    expect(reads.n).toBe(1);
    const outcomes = seen.filter((e) => e.type === 'pre-check');
    expect(outcomes).toEqual([
      { part: 'ledger', type: 'pre-check', ledger: 'wallet', outcome: 'skipped' },
      { part: 'ledger', type: 'pre-check', ledger: 'wallet', outcome: 'read-seen' },
    ]);
  });

  it('a false positive costs one read and answers false: the entry is then applied as usual', async () => {
    const { store, reads } = counted();
    const filter = new SeenFilter({ expected: 10 });
    filter.add(preCheckId('p1', 's9')); // as if s9 collided with an id of the filter
    const ledger = createLedger({ store, capacity: 4, preCheck: filter });
    expect(await ledger.seen(entry(9))).toBe(false);
    expect(reads.n).toBe(1);
    expect((await ledger.apply(entry(9))).outcome).toBe('applied');
  });

  it('a false negative (applied by another process, or forgotten) only loses the skipped read: apply still dedups', async () => {
    const base = memoryStore();
    const other = createLedger({ store: base, capacity: 4 });
    await other.apply(entry(1));
    const ledger = createLedger({ store: base, capacity: 4, preCheck: new SeenFilter({ expected: 10 }) });
    expect(await ledger.seen(entry(1))).toBe(false);
    expect((await ledger.apply(entry(1))).outcome).toBe('duplicate');
    expect(await ledger.balances('p1')).toEqual({ coins: 1n });
  });

  it('apply adds the signature before the store answers: a seen racing it reads the store', async () => {
    const { store, reads } = counted();
    const ledger = createLedger({ store, capacity: 4, preCheck: new SeenFilter({ expected: 10 }) });
    const applying = ledger.apply(entry(1));
    const racing = ledger.seen(entry(1));
    await applying;
    await racing;
    expect(reads.n).toBe(1);
  });

  it('an invalid entry is not added: a refused apply leaves the filter as it was', async () => {
    const filter = new SeenFilter({ expected: 10 });
    const ledger = createLedger({ capacity: 4, preCheck: filter });
    const err = await rejection(ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 1.5 } }));
    expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect(filter.size).toBe(0);
  });
});

describe('ledger pre-check across a restart', () => {
  it('rebuildPreCheck reads each owner window once and adds its signatures', async () => {
    const { store, reads, base } = counted();
    const before = createLedger({ store: base, capacity: 2 });
    for (const n of [1, 2, 3]) await before.apply(entry(n)); // the window keeps s2, s3
    await before.apply(entry(7, 'p2'));
    const ledger = createLedger({ store, capacity: 2, preCheck: new SeenFilter({ expected: 100 }) });
    expect(await ledger.rebuildPreCheck(['p1', 'p2', 'p3'])).toBe(3);
    expect(reads.n).toBe(3);
    expect(await ledger.seen(entry(3))).toBe(true);
    expect(await ledger.seen(entry(7, 'p2'))).toBe(true);
    expect(await ledger.seen(entry(1))).toBe(false); // left the window: the read says so too
  });

  it('a saved filter answers as before the restart', async () => {
    const filter = new SeenFilter({ expected: 100 });
    const store = memoryStore();
    await createLedger({ store, capacity: 4, preCheck: filter }).apply(entry(1));
    const saved = JSON.stringify(filter);
    const { store: spied, reads } = counted(store);
    const ledger = createLedger({ store: spied, capacity: 4, preCheck: SeenFilter.from(JSON.parse(saved)) });
    expect(await ledger.seen(entry(1))).toBe(true);
    expect(await ledger.seen(entry(2))).toBe(false);
    expect(reads.n).toBe(1);
  });
});

describe('ledger pre-check: bad input', () => {
  it('refuses a preCheck that is not a SeenFilter, and a rebuild without one', async () => {
    let err: unknown;
    try {
      createLedger({ capacity: 4, preCheck: { expected: 10 } as never });
    } catch (e) {
      err = e;
    }
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect((err as { option: string }).option).toBe('preCheck');
    const plain = createLedger({ capacity: 4 });
    expect(isOnceflowError(await rejection(plain.rebuildPreCheck(['p1'])), 'ERR_INVALID_OPTION')).toBe(true);
  });

  it('seen and rebuildPreCheck check their arguments before any read', async () => {
    const { store, reads } = counted();
    const ledger = createLedger({ store, capacity: 4, preCheck: new SeenFilter({ expected: 10 }) });
    for (const bad of [
      null,
      { owner: '', signature: 's' },
      { owner: 'p', signature: 7 },
      { owner: 'p', signatur: 's' },
    ]) {
      expect(isOnceflowError(await rejection(ledger.seen(bad as never)), 'ERR_INVALID_ARGUMENT')).toBe(true);
    }
    expect(
      isOnceflowError(
        await rejection(ledger.seen({ owner: 'p', signature: 'x'.repeat(1025) })),
        'ERR_INVALID_ARGUMENT',
      ),
    ).toBe(true);
    expect(isOnceflowError(await rejection(ledger.rebuildPreCheck(['p1', ''])), 'ERR_INVALID_ARGUMENT')).toBe(
      true,
    );
    expect(isOnceflowError(await rejection(ledger.rebuildPreCheck(7 as never)), 'ERR_INVALID_ARGUMENT')).toBe(
      true,
    );
    expect(reads.n).toBe(0);
  });
});
