import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/clock.js';
import { isOnceflowError } from '../../core/errors.js';
import { createLedger } from '../../ledger/ledger.js';
import { DEFAULT_JOURNAL_ENTRIES, memoryStore } from './memory-store.js';

describe('memoryStore', () => {
  it('stamps journal entries with its clock', async () => {
    const clock = new FakeClock(1_000);
    const ledger = createLedger({ store: memoryStore({ clock }), capacity: 4 });
    await ledger.apply({ owner: 'p', signature: 'a', deltas: { coins: 1 } });
    clock.advance(250);
    await ledger.apply({ owner: 'p', signature: 'b', deltas: { coins: 1 } });
    expect((await ledger.journal()).map((e) => e.at)).toEqual([1_000, 1_250]);
  });

  it('a store clock reading that is not a time fails the apply as a store error, changing nothing', async () => {
    let reading = Number.NaN;
    const ledger = createLedger({ store: memoryStore({ clock: { now: () => reading } }), capacity: 4 });
    const apply = () => ledger.apply({ owner: 'p', signature: 'a', deltas: { coins: 1 } });
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 2 ** 60]) {
      reading = bad;
      await expect(apply()).rejects.toMatchObject({ code: 'ERR_STORE' });
    }
    expect(await ledger.window('p')).toEqual({ signatures: [] });
    reading = 5.75; // a fraction is floored, as the limiter floors it
    expect((await apply()).outcome).toBe('applied');
    expect((await ledger.journal()).map((e) => e.at)).toEqual([5]);
  });

  it('numbers journal entries per owner, as the Redis store does (apply returns the same seq)', async () => {
    const ledger = createLedger({ capacity: 4 });
    const seqs = [];
    for (const [owner, signature] of [
      ['o1', 'a'],
      ['o2', 'a'],
      ['o1', 'b'],
      ['o1', 'b'],
      ['o1', 'c'],
    ]) {
      seqs.push(
        (await ledger.apply({ owner: owner as string, signature: signature as string, deltas: {} })).seq,
      );
    }
    expect(seqs).toEqual([1, 1, 2, undefined, 3]);
    expect((await ledger.journal()).map((e) => [e.owner, e.seq])).toEqual([
      ['o1', 1],
      ['o2', 1],
      ['o1', 2],
      ['o1', 3],
    ]);
    expect((await ledger.journal({ owner: 'o1', after: 1 })).map((e) => e.signature)).toEqual(['b', 'c']);
  });

  it('bounds the journal, dropping the oldest, while dedup and scope totals stay exact', async () => {
    const ledger = createLedger({ store: memoryStore({ journal: { maxEntries: 3 } }), capacity: 2 });
    for (let i = 0; i < 100; i++) {
      await ledger.apply({
        owner: 'p',
        signature: `s${i}`,
        deltas: { coins: i },
        scope: `r${i % 2}`,
        order: i,
      });
    }
    const journal = await ledger.journal();
    expect(journal.map((e) => e.signature)).toEqual(['s97', 's98', 's99']);
    expect(journal.map((e) => e.seq)).toEqual([98, 99, 100]);
    expect(await ledger.totals('r0')).toEqual({ coins: 2450n }); // 0 + 2 + ... + 98
    expect(await ledger.totals('r1')).toEqual({ coins: 2500n }); // 1 + 3 + ... + 99
    expect(
      (await ledger.apply({ owner: 'p', signature: 's5', deltas: { coins: 5 }, order: 5 })).outcome,
    ).toBe('stale');
    expect(
      (await ledger.apply({ owner: 'p', signature: 's99', deltas: { coins: 5 }, order: 99 })).outcome,
    ).toBe('duplicate');
  });

  it('keeps no journal with maxEntries 0, and still answers totals', async () => {
    const ledger = createLedger({ store: memoryStore({ journal: { maxEntries: 0 } }), capacity: 2 });
    const r = await ledger.apply({ owner: 'p', signature: 'a', deltas: { coins: 3 }, scope: 'x' });
    expect(r.seq).toBe(1);
    expect(await ledger.journal()).toEqual([]);
    expect(await ledger.totals('x')).toEqual({ coins: 3n });
  });

  it('a capacity change keeps every entry and shrinks one eviction at a time on the next insert', async () => {
    const store = memoryStore();
    const wide = createLedger({ store, capacity: 4 });
    for (const s of ['a', 'b', 'c', 'd']) await wide.apply({ owner: 'p', signature: s, deltas: {} });
    const narrow = createLedger({ store, capacity: 2 });
    expect((await narrow.apply({ owner: 'p', signature: 'a', deltas: {} })).outcome).toBe('duplicate');
    expect((await narrow.window('p')).signatures).toEqual(['a', 'b', 'c', 'd']);
    await narrow.apply({ owner: 'p', signature: 'e', deltas: {} });
    expect((await narrow.window('p')).signatures).toEqual(['d', 'e']);
  });

  it('rejects bad options with the option name', () => {
    for (const [opts, name] of [
      [{ journal: { maxEntries: -1 } }, 'journal.maxEntries'],
      [{ journal: 5 }, 'journal'],
      [{ clock: {} }, 'clock'],
    ] as const) {
      try {
        memoryStore(opts as never);
        expect.unreachable();
      } catch (err) {
        expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
        expect((err as Error).message).toContain(`\`${name}\``);
      }
    }
  });
});

describe('memoryStore journal retention by default', () => {
  it('keeps the newest DEFAULT_JOURNAL_ENTRIES per ledger; Infinity keeps everything', async () => {
    const ledger = createLedger({ store: memoryStore(), capacity: 1 });
    for (let i = 0; i < DEFAULT_JOURNAL_ENTRIES + 5; i++) {
      await ledger.apply({ owner: 'p', signature: `s${i}`, deltas: { coins: 1 }, scope: 'r' });
    }
    const journal = await ledger.journal();
    expect(journal.length).toBe(DEFAULT_JOURNAL_ENTRIES);
    expect(journal[0]?.signature).toBe('s5');
    // Balances and scope totals never depend on the journal.
    expect(await ledger.totals('r')).toEqual({ coins: BigInt(DEFAULT_JOURNAL_ENTRIES + 5) });
    const all = createLedger({
      store: memoryStore({ journal: { maxEntries: Number.POSITIVE_INFINITY } }),
      capacity: 1,
    });
    for (let i = 0; i < 10; i++) await all.apply({ owner: 'p', signature: `s${i}`, deltas: {} });
    expect((await all.journal()).length).toBe(10);
  });
});
