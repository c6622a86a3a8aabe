import { describe, expect, it } from 'vitest';
import { coded, rejected, thrown } from '../../test/support/thrown.js';
import { FakeClock } from '../core/clock.js';
import { defineSignature } from '../signature/define-signature.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { createLedger } from './ledger.js';

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

const thrownCode = (fn: () => unknown) => coded(thrown(fn));
const rejectedCode = async (p: Promise<unknown>) => coded(await rejected(p));

describe('createLedger', () => {
  it('a repeat is a duplicate and balances stay exact', async () => {
    // 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap (DESIGN §3.2).
    const ledger = createLedger({ capacity: 4 });
    const s = { room: 'lobby-7', round: 42, net: -300, final: false };
    const entry = { owner: 'player-1', signature: settlement(s), deltas: { coins: s.net }, scope: s.room };
    expect((await ledger.apply(entry)).outcome).toBe('applied');
    const again = await ledger.apply(entry);
    expect(again.outcome).toBe('duplicate');
    expect(again.balances).toEqual({ coins: -300n });
    expect(await ledger.totals('lobby-7')).toEqual({ coins: -300n });
  });

  it('validates options once, naming the option', () => {
    expect(thrownCode(() => createLedger({ capacity: 0 }))).toEqual({
      code: 'ERR_INVALID_OPTION',
      message: 'Expected `capacity` to be a positive safe integer, got `0` (number)',
    });
    expect(thrownCode(() => createLedger({ capacity: 2.5 })).message).toContain('`capacity`');
    expect(thrownCode(() => createLedger({} as never)).message).toContain('got `undefined`');
    expect(thrownCode(() => createLedger({ capacity: 4, store: {} as never })).message).toContain('`store`');
    expect(thrownCode(() => createLedger({ capacity: 4, horizon: 'yes' as never })).message).toContain(
      '`horizon`',
    );
    expect(thrownCode(() => createLedger({ capacity: 4, name: '' })).message).toContain('`name`');
  });

  it('rejects money that is not an integer, naming the field, and changes nothing', async () => {
    const ledger = createLedger({ capacity: 4 });
    await ledger.apply({ owner: 'p', signature: 'a', deltas: { coins: 5 } });
    for (const bad of [0.1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '5', null]) {
      const err = await rejectedCode(
        ledger.apply({ owner: 'p', signature: 'b', deltas: { coins: 1, gems: bad as never } }),
      );
      expect(err.code).toBe('ERR_INVALID_ARGUMENT');
      expect(err.message).toContain('`deltas.gems`');
    }
    // Nothing of the rejected entries landed: not the valid `coins` field, not the signature.
    expect(await ledger.balances('p')).toEqual({ coins: 5n });
    expect((await ledger.window('p')).signatures).toEqual(['a']);
    expect((await ledger.apply({ owner: 'p', signature: 'b', deltas: { coins: 1 } })).outcome).toBe(
      'applied',
    );
  });

  it('rejects bad owner, signature, scope, order, meta and deltas shapes', async () => {
    const ledger = createLedger({ capacity: 4 });
    const cases: [Record<string, unknown>, string][] = [
      [{ signature: 's', deltas: {} }, '`owner`'],
      [{ owner: '', signature: 's', deltas: {} }, '`owner`'],
      [{ owner: 'p', signature: 7, deltas: {} }, '`signature`'],
      [{ owner: 'p', signature: 's', deltas: [1] }, '`deltas`'],
      [{ owner: 'p', signature: 's', deltas: { '': 1 } }, '`deltas`'],
      [{ owner: 'p', signature: 's', deltas: JSON.parse('{"__proto__":5,"coins":1}') }, '`deltas`'],
      [{ owner: 'p', signature: 's', deltas: {}, scope: 3 }, '`scope`'],
      // A lone surrogate has no UTF-8 form (a store would write U+FFFD): refused everywhere.
      [{ owner: 'p\ud800', signature: 's', deltas: {} }, '`owner`'],
      [{ owner: 'p', signature: 's\udc00', deltas: {} }, '`signature`'],
      [{ owner: 'p', signature: 's', deltas: {}, scope: '\ud83d' }, '`scope`'],
      [{ owner: 'p', signature: 's', deltas: { 'c\ud800': 1 } }, '`deltas`'],
      [{ owner: 'p', signature: 's', deltas: {}, order: '3' }, '`order`'],
      [{ owner: 'p', signature: 's', deltas: {}, meta: { n: 1n } }, '`meta.n`'],
    ];
    for (const [entry, name] of cases) {
      const err = await rejectedCode(ledger.apply(entry as never));
      expect(err.code).toBe('ERR_INVALID_ARGUMENT');
      expect(err.message).toContain(name);
    }
    expect(await ledger.journal()).toEqual([]);
  });

  it('validates journal queries and reader arguments', async () => {
    const ledger = createLedger({ capacity: 4 });
    expect((await rejectedCode(ledger.journal({ limit: -1 }))).message).toContain('`query.limit`');
    expect((await rejectedCode(ledger.journal({ owner: '' }))).message).toContain('`query.owner`');
    expect((await rejectedCode(ledger.balances(''))).message).toContain('`owner`');
    expect((await rejectedCode(ledger.totals(undefined as never))).message).toContain('`scope`');
  });

  it('keeps ledgers of different names apart on one store', async () => {
    const store = memoryStore();
    const a = createLedger({ store, capacity: 4, name: 'a' });
    const b = createLedger({ store, capacity: 4, name: 'b' });
    await a.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } });
    expect((await b.apply({ owner: 'p', signature: 's', deltas: { coins: 2 } })).outcome).toBe('applied');
    expect(await a.balances('p')).toEqual({ coins: 1n });
    expect(await b.balances('p')).toEqual({ coins: 2n });
  });

  it('books each entry under its own scope: per-scope totals equal what each scope settled', async () => {
    const ledger = createLedger({ capacity: 4 });
    // Player moves from room A to room B while A's final settlement is still in flight.
    const log = [
      { room: 'A', round: 1, net: 50, final: false },
      { room: 'B', round: 9, net: -20, final: false },
      { room: 'A', round: 1, net: -5, final: true },
      { room: 'A', round: 1, net: 50, final: false },
      { room: 'B', round: 9, net: 80, final: true },
    ];
    for (const s of log) {
      await ledger.apply({ owner: 'p', signature: settlement(s), deltas: { coins: s.net }, scope: s.room });
    }
    expect(await ledger.totals('A')).toEqual({ coins: 45n });
    expect(await ledger.totals('B')).toEqual({ coins: 60n });
    expect(await ledger.balances('p')).toEqual({ coins: 105n });
    expect((await ledger.journal({ scope: 'A' })).map((e) => e.deltas['coins'])).toEqual([50n, -5n]);
  });

  it('journals every field of an entry: one delta or several, scope, order and meta', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const ledger = createLedger({ store: memoryStore({ clock }), capacity: 4 });
    await ledger.apply({ owner: 'p', signature: 'one', deltas: { coins: 5 } });
    clock.advance(7);
    await ledger.apply({
      owner: 'p',
      signature: 'two',
      deltas: { coins: -3, gems: 2n ** 70n },
      scope: 'room-1',
      order: 12,
      meta: { round: 4 },
    });
    const [one, two] = await ledger.journal();
    expect(one).toEqual({
      seq: 1,
      owner: 'p',
      signature: 'one',
      deltas: { coins: 5n },
      at: 1_700_000_000_000,
    });
    expect(two).toEqual({
      seq: 2,
      owner: 'p',
      signature: 'two',
      deltas: { coins: -3n, gems: 2n ** 70n },
      scope: 'room-1',
      order: 12,
      meta: { round: 4 },
      at: 1_700_000_000_007,
    });
    // Several deltas: the returned object is a copy too.
    (two?.deltas as Record<string, bigint>)['gems'] = 0n;
    expect((await ledger.journal({ scope: 'room-1' }))[0]?.deltas).toEqual({ coins: -3n, gems: 2n ** 70n });
  });

  it('its name, capacity and store cannot be changed from outside', async () => {
    const store = memoryStore();
    const ledger = createLedger({ store, capacity: 4 });
    for (const [field, value] of [
      ['name', 'other'],
      ['capacity', 1],
      ['store', memoryStore()],
    ] as const) {
      expect(() => {
        (ledger as unknown as Record<string, unknown>)[field] = value;
      }).toThrow(TypeError);
    }
    await ledger.apply({ owner: 'p', signature: 's1', deltas: { coins: 1 } });
    await ledger.apply({ owner: 'p', signature: 's2', deltas: { coins: 1 } });
    expect((await ledger.apply({ owner: 'p', signature: 's1', deltas: { coins: 1 } })).outcome).toBe(
      'duplicate',
    );
    expect(await createLedger({ store, capacity: 4 }).balances('p')).toEqual({ coins: 2n });
  });

  it('meta must be JSON: anything else is a typed error naming where, and changes nothing', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    const holey: unknown[] = new Array(3);
    holey[0] = 1;
    holey[2] = 3;
    let deep: unknown = 1;
    for (let i = 0; i < 1001; i++) deep = [deep];
    const bad: [unknown, string][] = [
      [{ f: () => 1 }, 'meta.f'],
      [{ when: new Date(0) }, 'meta.when'],
      [{ a: undefined }, 'meta.a'],
      [{ n: [1, Number.NaN] }, 'meta.n[1]'],
      [{ big: 1n }, 'meta.big'],
      [holey, 'meta[1]'],
      [{ m: new Map() }, 'meta.m'],
      [{ [Symbol('s')]: 1 }, 'meta'],
      [cyclic, 'meta.self'],
      [deep, 'meta'],
    ];
    const ledger = createLedger({ capacity: 4 });
    for (const [meta, path] of bad) {
      const err = await rejected(
        ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 5 }, meta: meta as never }),
      );
      expect(coded(err)).toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
        message: expect.stringContaining(`\`${path}\``),
      });
    }
    expect(await ledger.balances('p')).toEqual({});
    expect((await ledger.window('p')).signatures).toEqual([]);
    const ok = { a: [1, 'x', null, true, { b: -2.5 }], c: {} };
    await ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 5 }, meta: ok });
    expect((await ledger.journal())[0]?.meta).toEqual(ok);
  });

  it('keeps meta as JSON would give it back: a copy, each property read once, -0 as 0', async () => {
    let reads = 0;
    const getter = {
      get v() {
        reads++;
        return reads === 1 ? 1 : 10;
      },
    };
    const tagged = Object.assign([1, 2], { extra: 'x' });
    const parsed = JSON.parse('{"__proto__": {"x": 1}}') as Record<string, unknown>;
    const cases: [unknown, unknown][] = [
      [new Proxy({ k: 1 }, {}), { k: 1 }],
      [getter, { v: 1 }],
      [{ n: -0 }, { n: 0 }],
      [{ a: tagged }, { a: [1, 2] }],
      [parsed, JSON.parse('{"__proto__": {"x": 1}}')],
    ];
    const ledger = createLedger({ capacity: 64 });
    for (const [i, [meta]] of cases.entries()) {
      await ledger.apply({ owner: 'p', signature: `s${i}`, deltas: { coins: 1 }, meta: meta as never });
    }
    const got = (await ledger.journal()).map((e) => e.meta);
    for (const [i, [, want]] of cases.entries()) expect(got[i]).toStrictEqual(want);
    expect(Object.is((got[2] as { n: number }).n, -0)).toBe(false);
    expect(Object.getPrototypeOf(got[4])).toBe(Object.prototype); // an own `__proto__`, not a prototype
    expect(reads).toBe(1);
    // The caller's object is not kept: changing it later changes nothing.
    const mine = { round: 1 };
    await ledger.apply({ owner: 'q', signature: 'm', deltas: { coins: 1 }, meta: mine });
    mine.round = 2;
    expect((await ledger.journal({ owner: 'q' }))[0]?.meta).toEqual({ round: 1 });
  });

  it('a store that throws instead of rejecting: apply rejects, never throws', async () => {
    const store = wrapStore(memoryStore(), {
      ledgerApply: () => {
        throw new Error('boom');
      },
    });
    const ledger = createLedger({ store, capacity: 4 });
    let pending: Promise<unknown> | undefined;
    expect(() => {
      pending = ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } });
    }).not.toThrow();
    await expect(pending).rejects.toThrow('boom');
  });

  it('the memory store called directly: a command it cannot apply whole changes nothing', async () => {
    const store = memoryStore();
    const base = { ledger: 'L', capacity: 4, horizon: true, owner: 'p' } as const;
    const badDeltas = await rejected(
      store.ledgerApply({
        ...base,
        signature: 's1',
        deltas: [
          ['a', 1n],
          ['b', 2 as unknown as bigint],
        ],
      }),
    );
    expect(coded(badDeltas).code).toBe('ERR_INVALID_ARGUMENT');
    const badMeta = await rejected(
      store.ledgerApply({ ...base, signature: 's1', deltas: [['a', 1n]], meta: (() => 1) as never }),
    );
    expect(coded(badMeta).code).toBe('ERR_STORE');
    expect(await store.ledgerBalances('L', 'p')).toEqual({});
    expect((await store.ledgerWindow('L', 'p')).signatures).toEqual([]);
    expect((await store.ledgerApply({ ...base, signature: 's1', deltas: [['a', 1n]] })).outcome).toBe(
      'applied',
    );
  });

  it('a store clock that fails: the apply is a StoreError and changes nothing (applied whole or not at all)', async () => {
    let broken = false;
    const store = memoryStore({
      clock: {
        now: () => {
          if (broken) throw new Error('clock gone');
          return 0;
        },
      },
    });
    const ledger = createLedger({ store, capacity: 4 });
    await ledger.apply({ owner: 'p', signature: 'a', deltas: { coins: 1 }, scope: 'r' });
    broken = true;
    const err = await rejected(
      ledger.apply({ owner: 'p', signature: 'b', deltas: { coins: 5 }, scope: 'r' }),
    );
    expect(coded(err)).toMatchObject({ code: 'ERR_STORE', message: expect.stringContaining('clock gone') });
    expect(await ledger.balances('p')).toEqual({ coins: 1n });
    expect(await ledger.totals('r')).toEqual({ coins: 1n });
    expect((await ledger.window('p')).signatures).toEqual(['a']);
    broken = false;
    expect(
      (await ledger.apply({ owner: 'p', signature: 'b', deltas: { coins: 5 }, scope: 'r' })).outcome,
    ).toBe('applied');
  });

  it('books own delta fields only: a polluted Object.prototype adds nothing', async () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto['bonus'] = 5;
    let result: Awaited<ReturnType<ReturnType<typeof createLedger>['apply']>>;
    try {
      result = await createLedger({ capacity: 4 }).apply({
        owner: 'p',
        signature: 's1',
        deltas: { coins: 1 },
      });
    } finally {
      delete proto['bonus'];
    }
    expect(result.balances).toEqual({ coins: 1n });
    expect(Object.keys(result.balances)).toEqual(['coins']);
  });

  it('an unknown entry field (a misspelt order) is refused with a did-you-mean, and nothing is booked', async () => {
    const ledger = createLedger({ capacity: 1 });
    const entry = { owner: 'p', signature: 's1', deltas: { coins: 1 }, ordr: 5 };
    const err = await rejected(ledger.apply(entry as never));
    expect(coded(err)).toEqual({
      code: 'ERR_INVALID_ARGUMENT',
      message: 'Expected `ordr` to be a known field (did you mean `order`?), got `5` (number)',
    });
    expect(await rejectedCode(ledger.resolve(entry as never))).toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
    });
    expect(await ledger.balances('p')).toEqual({});
    expect(await ledger.journal()).toEqual([]);
    expect(await rejectedCode(ledger.journal({ owner: 'p', limt: 1 } as never))).toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
      message: expect.stringContaining('`query.limt`'),
    });
  });

  it('fields named like prototype properties are plain fields, even with frozen intrinsics', async () => {
    const descriptor = Object.getOwnPropertyDescriptor(Object.prototype, 'toString') as PropertyDescriptor;
    Object.defineProperty(Object.prototype, 'toString', { ...descriptor, writable: false });
    try {
      const ledger = createLedger({ capacity: 4 });
      const r = await ledger.apply({ owner: 'p', signature: 's1', deltas: { coins: 1, toString: 2 } });
      expect(r.outcome).toBe('applied');
      expect(Object.getOwnPropertyDescriptor(r.balances, 'toString')?.value).toBe(2n);
      await ledger.apply({ owner: 'p', signature: 's2', deltas: { constructor: 3 } });
      const journal = await ledger.journal();
      expect(Object.getOwnPropertyDescriptor(journal[1]?.deltas, 'constructor')?.value).toBe(3n);
      expect(Object.getOwnPropertyDescriptor(await ledger.balances('p'), 'toString')?.value).toBe(2n);
    } finally {
      Object.defineProperty(Object.prototype, 'toString', descriptor);
    }
  });

  it('a revoked proxy as input is a typed error', async () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const err = await rejected(
      createLedger({ capacity: 4 }).apply({ owner: 'p', signature: 's', deltas: proxy as never }),
    );
    expect(coded(err).code).toBe('ERR_INVALID_ARGUMENT');
  });

  it('returns copies: a caller mutating results cannot change the ledger', async () => {
    const ledger = createLedger({ capacity: 4 });
    const r = await ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 }, meta: { k: 1 } });
    r.balances['coins'] = 1000n;
    const [entry] = await ledger.journal();
    if (!entry) throw new Error('journal empty');
    (entry.deltas as Record<string, bigint>)['coins'] = 1000n;
    (entry.meta as { k: number }).k = 2;
    expect(await ledger.balances('p')).toEqual({ coins: 1n });
    const [again] = await ledger.journal();
    expect(again?.deltas).toEqual({ coins: 1n });
    expect(again?.meta).toEqual({ k: 1 });
  });
});
