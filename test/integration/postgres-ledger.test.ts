import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/core/limits.js';
import { createLedger, type LedgerEntry } from '../../src/index.js';
import type { PgContext } from '../../src/postgres/context.js';
import { createPostgresStore } from '../../src/postgres/index.js';
import { checkLedgerOptions, ledgerCleanup } from '../../src/postgres/ledger-ops.js';
import type { PgPoolLike, PgQueryConfig } from '../../src/postgres/pg-like.js';
import type { LedgerApplyCommand } from '../../src/store/store.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';

const pool = testPool(8);
const schema = runSchema('ledger');
// Schemas of their own for the clean-up tests: a clean-up walks every owner of its schema.
const made = [schema];
function ownSchema(tag: string): string {
  const name = runSchema(tag);
  made.push(name);
  return name;
}
afterAll(async () => {
  for (const name of made) await dropSchema(pool, name);
  await pool.end();
});

/** The seqs of an owner's journal rows, straight from SQL (what retention left). */
async function journalRows(ledger: string, owner: string, inSchema = schema): Promise<number[]> {
  const { rows } = await pool.query(
    `SELECT seq FROM "${inSchema}".ledger_journal WHERE ledger = $1 AND owner = $2 ORDER BY seq`,
    [ledger, owner],
  );
  return rows.map((r) => Number(r.seq));
}

describe('Postgres ledger under concurrency (a pool of 8 on one owner)', () => {
  it('overlapping duplicate deliveries, applied and resolved at once: each signature booked once, balances and totals exact, seqs 1..n', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), { minLength: 50, maxLength: 150 }),
        fc.integer({ min: 2, max: 4 }),
        fc.integer(),
        async (amounts, copies, seed) => {
          const store = createPostgresStore({ pool, schema });
          const name = `hammer${seed}_${amounts.length}`;
          // Capacity = the number of distinct signatures: every repeat reaches a window that still
          // holds its first delivery (the rule of DESIGN §3.2), whatever the interleaving.
          const ledger = createLedger({ store, capacity: amounts.length, name });
          const deliveries: { i: number; resolve: boolean }[] = [];
          for (let c = 0; c < copies; c++) {
            for (let i = 0; i < amounts.length; i++) deliveries.push({ i, resolve: (i + c) % 5 === 0 });
          }
          // A shuffle from the seed: repeats of one signature land on different connections.
          let x = seed >>> 0 || 1;
          for (let k = deliveries.length - 1; k > 0; k--) {
            x = (x * 1103515245 + 12345) >>> 0;
            const j = x % (k + 1);
            [deliveries[k], deliveries[j]] = [deliveries[j] as never, deliveries[k] as never];
          }
          const results = await Promise.all(
            deliveries.map(({ i, resolve }) => {
              const entry: LedgerEntry = {
                owner: 'hot',
                signature: `sig-${i}`,
                deltas: { coins: amounts[i] as bigint },
                scope: 'room',
              };
              return resolve ? ledger.resolve(entry) : ledger.apply(entry);
            }),
          );
          const sum = amounts.reduce((t, a) => t + a, 0n);
          expect(results.filter((r) => r.outcome === 'applied')).toHaveLength(amounts.length);
          expect(results.filter((r) => r.outcome !== 'applied' && r.outcome !== 'duplicate')).toEqual([]);
          expect(await ledger.balances('hot')).toEqual({ coins: sum });
          expect(await ledger.totals('room')).toEqual({ coins: sum });
          const journal = await ledger.journal({ owner: 'hot' });
          expect(journal.map((e) => e.seq)).toEqual(amounts.map((_a, k) => k + 1));
          expect(new Set(journal.map((e) => e.signature)).size).toBe(amounts.length);
          // The seqs the applies answered are the journal's, each once.
          const seqs = results.flatMap((r) => (r.outcome === 'applied' ? [r.seq] : [])).sort((a, b) => a - b);
          expect(seqs).toEqual(amounts.map((_a, k) => k + 1));
          // Each entry's balance after it is the running sum in seq order: no lost update.
          const bySig = new Map(journal.map((e) => [e.signature, e.seq]));
          let running = 0n;
          const after = new Map<number, bigint>();
          for (const e of journal) {
            running += e.deltas['coins'] as bigint;
            after.set(e.seq, running);
          }
          for (const [k, r] of results.entries()) {
            if (r.outcome !== 'applied') continue;
            const sig = `sig-${(deliveries[k] as { i: number }).i}`;
            expect(r.seq).toBe(bySig.get(sig));
            expect(r.balances).toEqual({ coins: after.get(r.seq) });
          }
        },
      ),
      { numRuns: 8 },
    );
  });

  it('first entries of many new owners racing on 8 connections: one row per owner, nothing lost', async () => {
    const store = createPostgresStore({ pool, schema });
    const ledger = createLedger({ store, capacity: 4, name: 'first-contact' });
    const owners = Array.from({ length: 40 }, (_v, i) => `new-${i}`);
    const results = await Promise.all(
      owners.flatMap((owner) =>
        [1, 2, 3].map((n) => ledger.apply({ owner, signature: `s${n % 2}`, deltas: { coins: n } })),
      ),
    );
    expect(results.filter((r) => r.outcome === 'applied')).toHaveLength(owners.length * 2);
    for (const owner of owners) {
      const journal = await ledger.journal({ owner });
      expect(journal.map((e) => e.seq)).toEqual([1, 2]);
      const balance = (await ledger.balances(owner))['coins'] as bigint;
      expect(journal.reduce((t, e) => t + (e.deltas['coins'] as bigint), 0n)).toBe(balance);
    }
  });
});

describe('Postgres ledger: input refused before any SQL', () => {
  /** A pool that records every statement and answers none: nothing may reach it. */
  function recordingPool(): { pool: PgPoolLike; calls: PgQueryConfig[] } {
    const calls: PgQueryConfig[] = [];
    const client = {
      query: async (config: PgQueryConfig) => {
        calls.push(config);
        return { rows: [{ outcome: 'applied', seq: '1', balances: '{}' }] };
      },
      release: () => {},
    };
    return { pool: { connect: async () => client, query: client.query }, calls };
  }
  const base: LedgerApplyCommand = {
    ledger: 'l',
    capacity: 4,
    horizon: true,
    owner: 'p1',
    signature: 's1',
    deltas: [['coins', 1n]],
  };
  const long = (bytes: number) => 'x'.repeat(bytes + 1);
  const bad: [string, Partial<Record<keyof LedgerApplyCommand, unknown>>, string][] = [
    ['owner', { owner: 'p\u00001' }, 'owner'],
    ['signature', { signature: 's\u0000' }, 'signature'],
    ['scope', { scope: '\u0000' }, 'scope'],
    ['ledger', { ledger: 'l\u0000' }, 'ledger'],
    ['field', { deltas: [['co\u0000ins', 1n]] }, 'deltas'],
    ['owner size', { owner: long(LIMITS.ownerBytes) }, 'owner'],
    ['signature size', { signature: long(LIMITS.signatureBytes) }, 'signature'],
    ['scope size', { scope: long(LIMITS.scopeBytes) }, 'scope'],
    ['ledger size', { ledger: long(LIMITS.nameBytes) }, 'ledger'],
    ['field size', { deltas: [[long(LIMITS.fieldBytes), 1n]] }, 'deltas'],
    ['meta size', { meta: long(LIMITS.metaBytes) }, 'meta'],
    [
      'too many fields',
      { deltas: Array.from({ length: LIMITS.deltas + 1 }, (_v, i) => [`f${i}`, 1n]) },
      'deltas',
    ],
    [
      'a field twice',
      {
        deltas: [
          ['a', 1n],
          ['a', 2n],
        ],
      },
      'deltas',
    ],
    ['a number amount', { deltas: [['a', 1]] }, 'deltas'],
    ['an amount past numeric', { deltas: [['a', 10n ** 131_072n]] }, 'deltas.a'],
    ['a fractional order', { order: 1.5 }, 'order'],
    ['an order past numeric', { order: -(10n ** 131_072n) }, 'order'],
    ['capacity 0', { capacity: 0 }, 'capacity'],
    ['a horizon not boolean', { horizon: 'yes' }, 'horizon'],
    ['meta not JSON', { meta: () => 1 }, 'meta'],
    ['a lone surrogate', { owner: 'p\ud800' }, 'owner'],
  ];

  for (const operation of ['ledgerApply', 'ledgerResolve'] as const) {
    for (const [what, change, path] of bad) {
      it(`${operation}: ${what} is an ERR_INVALID_ARGUMENT naming \`${path}\`, and no statement is sent`, async () => {
        const { pool: stub, calls } = recordingPool();
        const store = createPostgresStore({ pool: stub, migrate: false });
        const err = await store[operation]({ ...base, ...change } as LedgerApplyCommand).catch((e) => e);
        expect(err.code).toBe('ERR_INVALID_ARGUMENT');
        expect(err.path).toBe(path);
        if (what === 'owner' || what === 'signature') expect(err.message).toContain('U+0000');
        expect(calls).toEqual([]);
      });
    }
  }

  it('the bounds themselves are accepted: the stub sees exactly those statements, one each', async () => {
    const { pool: stub, calls } = recordingPool();
    const store = createPostgresStore({ pool: stub, migrate: false });
    await store.ledgerApply({
      ...base,
      owner: 'o'.repeat(LIMITS.ownerBytes),
      signature: 's'.repeat(LIMITS.signatureBytes),
      scope: 'r'.repeat(LIMITS.scopeBytes),
      deltas: [['f'.repeat(LIMITS.fieldBytes), -(10n ** 131_071n)]],
      order: 10n ** 131_071n,
      meta: { note: 'a NUL inside JSON is the escape \u0000, which text holds' },
    });
    await store.ledgerResolve(base);
    expect(calls).toHaveLength(2);
    expect(calls[0]?.text).toContain('.ledger_apply(');
    expect(calls[0]?.name).toBe(calls[1]?.name);
    expect(calls[0]?.values?.[0]).toBe(false);
    expect(calls[1]?.values?.[0]).toBe(true);
  });

  it('reads refuse a NUL or a bad query before any SQL', async () => {
    const { pool: stub, calls } = recordingPool();
    const store = createPostgresStore({ pool: stub, migrate: false });
    const reads: [Promise<unknown>, string][] = [
      [store.ledgerBalances('l', 'p\u0000'), 'owner'],
      [store.ledgerWindow('l', 'p\u0000'), 'owner'],
      [store.ledgerBalances('l\u0000', 'p'), 'ledger'],
      [store.ledgerScopeTotals('l', 'r\u0000'), 'scope'],
      [store.ledgerJournal('l', { owner: 'p\u0000' }), 'query.owner'],
      [store.ledgerJournal('l', { scope: '\u0000' }), 'query.scope'],
      [store.ledgerJournal('l', { owner: 'p', after: -1 }), 'query.after'],
      [store.ledgerJournal('l', { limit: 1.5 }), 'query.limit'],
    ];
    for (const [read, path] of reads) {
      const err = (await read.catch((e) => e)) as { code?: string; path?: string };
      expect(err.code, path).toBe('ERR_INVALID_ARGUMENT');
      expect(err.path).toBe(path);
    }
    expect(calls).toEqual([]);
    // Through the ledger too: its own checks, then the store's, and still nothing sent.
    const ledger = createLedger({ store, capacity: 4 });
    const err = await ledger.apply({ owner: 'p\u0000', signature: 's', deltas: {} }).catch((e) => e);
    expect(err.code).toBe('ERR_INVALID_ARGUMENT');
    expect(err.path).toBe('owner');
    expect(calls).toEqual([]);
  });

  it('journal options: maxEntries refused by name, a bad maxEntriesPerOwner refused, Infinity keeps all', () => {
    const { pool: stub } = recordingPool();
    const make = (journal: unknown) => () =>
      createPostgresStore({
        pool: stub,
        migrate: false,
        journal: journal as { maxEntriesPerOwner?: number },
      });
    expect(make({ maxEntries: 5 })).toThrow(/journal\.maxEntries.*per owner/);
    expect(make({ maxEntriesPerOwner: -1 })).toThrow(/journal\.maxEntriesPerOwner/);
    expect(make({ maxEntriesPerOwner: 1.5 })).toThrow(/journal\.maxEntriesPerOwner/);
    expect(make('all')).toThrow(/`journal`/);
    expect(make({ maxEntriesPerOwner: Number.POSITIVE_INFINITY })).not.toThrow();
    expect(make({})).not.toThrow();
  });
});

describe('Postgres ledger: journal retention and cleanup', () => {
  it('a lowered limit is caught up a few rows per apply and by cleanup; resolve knows what was dropped', async () => {
    const name = 'lowered';
    const own = ownSchema('ledger_lowered');
    const all = createLedger({ store: createPostgresStore({ pool, schema: own }), capacity: 2, name });
    for (let i = 1; i <= 30; i++) {
      await all.apply({ owner: 'busy', signature: `b${i}`, deltas: { coins: 1 }, order: i });
      await all.apply({ owner: 'idle', signature: `i${i}`, deltas: { coins: 1 }, order: i });
    }
    const store = createPostgresStore({ pool, schema: own, journal: { maxEntriesPerOwner: 5 } });
    const five = createLedger({ store, capacity: 2, name });
    const rows = (owner: string) => journalRows(name, owner, own);
    const resolve = async (owner: string, signature: string, order: number) =>
      (await five.resolve({ owner, signature, deltas: { coins: 1 }, order })).outcome;
    // One apply drops the rows past the limit, at most 8 of them (the bound per apply).
    await five.apply({ owner: 'busy', signature: 'b31', deltas: { coins: 1 }, order: 31 });
    expect(await rows('busy')).toEqual(range(9, 31));
    // Resolve of an entry the window and the journal lost: orders at or below the dropped ones
    // (1..8) are unknown, above them provably new.
    expect(await resolve('busy', 'b3', 3)).toBe('unknown');
    expect(await resolve('busy', 'b9', 9)).toBe('duplicate');
    expect(await resolve('busy', 'x', 8)).toBe('unknown');
    expect(await resolve('busy', 'y', 9)).toBe('applied');
    // Booked as an apply books: 8 more rows dropped (9..16).
    expect(await rows('busy')).toEqual(range(17, 32));
    // Cleanup: at most `limit` rows per call, the busy owner's backlog (11 rows: 17..27) and the
    // idle one's (25 rows), then nothing.
    const deleted: number[] = [];
    for (let i = 0; i < 6; i++) deleted.push((await store.cleanup({ limit: 10 })).journal);
    expect(deleted).toEqual([10, 10, 10, 6, 0, 0]);
    expect(await rows('idle')).toEqual(range(26, 30));
    expect(await rows('busy')).toEqual(range(28, 32));
    expect((await five.journal({ owner: 'idle' })).map((e) => e.signature)).toEqual(
      range(26, 30).map((i) => `i${i}`),
    );
    // What cleanup dropped is known to resolve as well.
    expect(await resolve('idle', 'z', 25)).toBe('unknown');
    expect(await resolve('idle', 'z', 31)).toBe('applied');
    // Balances never depend on retention.
    expect(await five.balances('busy')).toEqual({ coins: 32n });
    expect(await five.balances('idle')).toEqual({ coins: 31n });
  });

  it('cleanup from several processes at once deletes each row once, and never more than asked', async () => {
    const name = 'parallel-cleanup';
    const own = ownSchema('ledger_parallel');
    const all = createLedger({ store: createPostgresStore({ pool, schema: own }), capacity: 1, name });
    await Promise.all(
      Array.from({ length: 12 }, async (_v, o) => {
        for (let i = 1; i <= 12; i++) await all.apply({ owner: `o${o}`, signature: `s${i}`, deltas: {} });
      }),
    );
    const stores = Array.from({ length: 4 }, () =>
      createPostgresStore({ pool, schema: own, journal: { maxEntriesPerOwner: 2 } }),
    );
    let total = 0;
    for (let round = 0; round < 10; round++) {
      const got = await Promise.all(stores.map((s) => s.cleanup({ limit: 7 })));
      for (const r of got) expect(r.journal).toBeLessThanOrEqual(7);
      total += got.reduce((t, r) => t + r.journal, 0);
    }
    expect(total).toBe(12 * 10);
    for (let o = 0; o < 12; o++) expect(await journalRows(name, `o${o}`, own)).toEqual([11, 12]);
  });

  it('a journal of 0 entries writes none; resolve proves new only an owner that booked nothing', async () => {
    const ledger = createLedger({
      store: createPostgresStore({ pool, schema, journal: { maxEntriesPerOwner: 0 } }),
      capacity: 1,
      name: 'none-kept',
    });
    expect((await ledger.resolve({ owner: 'n', signature: 'a', deltas: { c: 1 }, order: 1 })).outcome).toBe(
      'applied',
    );
    expect((await ledger.apply({ owner: 'n', signature: 'b', deltas: { c: 1 }, order: 2 })).outcome).toBe(
      'applied',
    );
    expect(await journalRows('none-kept', 'n')).toEqual([]);
    expect(await ledger.journal({ owner: 'n' })).toEqual([]);
    expect((await ledger.resolve({ owner: 'n', signature: 'c', deltas: { c: 1 }, order: 9 })).outcome).toBe(
      'unknown',
    );
    expect((await ledger.resolve({ owner: 'n', signature: 'b', deltas: { c: 1 }, order: 2 })).outcome).toBe(
      'duplicate',
    );
    // The same owner read by a store that keeps every entry: nothing it lost is called new.
    const all = createLedger({
      store: createPostgresStore({ pool, schema }),
      capacity: 1,
      name: 'none-kept',
    });
    expect((await all.resolve({ owner: 'n', signature: 'a', deltas: { c: 1 }, order: 1 })).outcome).toBe(
      'unknown',
    );
    expect((await all.resolve({ owner: 'n', signature: 'd', deltas: { c: 1 }, order: 3 })).outcome).toBe(
      'applied',
    );
    expect(await all.balances('n')).toEqual({ c: 3n });
  });

  it('with every entry kept, cleanup sends no statement', async () => {
    const calls: PgQueryConfig[] = [];
    const ctx: PgContext = {
      schema: '"unused"',
      bound: false,
      query: async (_operation, _kind, config) => {
        calls.push(config);
        return [{ deleted: '3' }];
      },
    };
    expect(await ledgerCleanup(ctx, checkLedgerOptions({}))(1000)).toBe(0);
    expect(calls).toEqual([]);
    // With a limit, one statement per call.
    expect(await ledgerCleanup(ctx, checkLedgerOptions({ journal: { maxEntriesPerOwner: 3 } }))(1000)).toBe(
      3,
    );
    expect(calls).toHaveLength(1);
  });
});

describe('Postgres ledger: what is stored comes back as it was', () => {
  it('meta keeps its key order and values (text, not jsonb); at is the database clock in ms', async () => {
    const ledger = createLedger({ store: createPostgresStore({ pool, schema }), capacity: 4, name: 'meta' });
    const meta = { z: 1, a: [true, null, -1.5e300], m: { y: 'ü', b: '\u0000', '': 0 }, __proto__x: 'p' };
    const before = Date.now();
    await ledger.apply({
      owner: 'p',
      signature: 's',
      deltas: { b: 2, a: 1 },
      meta,
      scope: 'r',
      order: 2n ** 64n,
    });
    const after = Date.now();
    const [entry] = await ledger.journal({ owner: 'p' });
    expect(entry?.meta).toEqual(meta);
    expect(JSON.stringify(entry?.meta)).toBe(JSON.stringify(meta));
    expect(Object.keys(entry?.deltas ?? {})).toEqual(['b', 'a']);
    expect(entry?.order).toBe(2n ** 64n);
    expect(Number.isSafeInteger(entry?.at)).toBe(true);
    // Same machine: the database's clock and this process's agree within a second.
    expect(entry?.at).toBeGreaterThanOrEqual(before - 1000);
    expect(entry?.at).toBeLessThanOrEqual(after + 1000);
  });

  it('a schema name of 63 characters: every statement keeps a name of its own (PostgreSQL cuts names at 63 bytes)', async () => {
    const long = `${runSchema('ledger')}_${'x'.repeat(63)}`.slice(0, 63);
    const one = testPool(1);
    try {
      const ledger = createLedger({ store: createPostgresStore({ pool: one, schema: long }), capacity: 1 });
      expect((await ledger.apply({ owner: 'p', signature: 'a', deltas: { c: 1 }, order: 1 })).outcome).toBe(
        'applied',
      );
      expect((await ledger.resolve({ owner: 'p', signature: 'b', deltas: { c: 1 }, order: 2 })).outcome).toBe(
        'applied',
      );
      expect(await ledger.balances('p')).toEqual({ c: 2n });
      expect(await ledger.window('p')).toEqual({ signatures: ['b'], horizon: 1 });
      expect(await ledger.totals('none')).toEqual({});
      expect((await ledger.journal()).map((e) => e.signature)).toEqual(['a', 'b']);
    } finally {
      await dropSchema(one, long);
      await one.end();
    }
  });

  it('inTransaction: an apply commits or rolls back with the caller', async () => {
    const store = createPostgresStore({ pool, schema });
    const ledger = createLedger({ store, capacity: 4, name: 'tx' });
    await ledger.balances('p'); // migrated before the transaction
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const inTx = createLedger({ store: store.inTransaction(client), capacity: 4, name: 'tx' });
      expect((await inTx.apply({ owner: 'p', signature: 's', deltas: { c: 5 } })).outcome).toBe('applied');
      await client.query('ROLLBACK');
      expect(await ledger.balances('p')).toEqual({});
      await client.query('BEGIN');
      expect((await inTx.apply({ owner: 'p', signature: 's', deltas: { c: 5 } })).outcome).toBe('applied');
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    expect(await ledger.balances('p')).toEqual({ c: 5n });
    expect((await ledger.apply({ owner: 'p', signature: 's', deltas: { c: 5 } })).outcome).toBe('duplicate');
  });
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_v, i) => from + i);
}
