import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedger, type LedgerEntry, memoryStore, type Store } from '../../src/index.js';
import { createPostgresStore } from '../../src/postgres/index.js';
import type { JsonValue } from '../../src/store/store.js';
import { runScenario, scenarios } from '../support/resolve-model.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';

type Op =
  | { kind: 'apply' | 'resolve'; entry: LedgerEntry }
  | { kind: 'balances'; owner: string }
  | { kind: 'window'; owner: string }
  | { kind: 'totals'; scope: string }
  | { kind: 'journal'; owner?: string; scope?: string; after?: number; limit?: number };

// Owners and scopes that an SQL array or JSON literal would have to escape, and non-ASCII ones.
const owners = ['p1', 'p2', 'a"b', 'ü'] as const;
const owner = fc.constantFrom(...owners);
const scope = fc.constantFrom('r1', 'r2', 'room|9', '{x,y}');
const amount = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map(BigInt),
  // Beyond 64 bits: numeric, never bigint, in the schema.
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }),
  fc.constantFrom(2n ** 53n + 1n, 2n ** 63n, -(2n ** 63n) - 1n),
);
// Mostly a few small orders, so an absent signature often lands exactly on the horizon; some
// far apart and beyond 2^53, where only an exact comparison tells them apart.
const order = fc.option(
  fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 0, max: 6 }) },
    { weight: 1, arbitrary: fc.integer({ min: -20, max: 20 }) },
    { weight: 1, arbitrary: fc.constantFrom(2n ** 60n, 2n ** 60n + 1n, 2n ** 60n + 2n) },
    { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }) },
  ),
  { nil: undefined },
);
const meta = fc.option(
  fc.oneof(
    fc.constant({ z: 1, a: [true, null], m: { y: 'ü', b: '\u0000' } }),
    fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown),
  ),
  { nil: undefined, freq: 3 },
);
const entryOf = (
  r: { owner: string; signature: string; deltas: Record<string, bigint> } & {
    scope: string | undefined;
    order: number | bigint | undefined;
    meta: unknown;
  },
): LedgerEntry => {
  const entry: LedgerEntry = { owner: r.owner, signature: r.signature, deltas: r.deltas };
  if (r.scope !== undefined) entry.scope = r.scope;
  if (r.order !== undefined) entry.order = r.order;
  if (r.meta !== undefined) entry.meta = r.meta as JsonValue;
  return entry;
};
const entry = (owners: fc.Arbitrary<string>): fc.Arbitrary<LedgerEntry> =>
  fc
    .record({
      owner: owners,
      // Array literal and JSON specials: quotes, backslashes, braces, commas, the word NULL.
      signature: fc.constantFrom('s1', 's2', 's3', 'ab', 'NULL', '"', '\\', '{}', 'b,a', 'ÿ'),
      deltas: fc.dictionary(fc.constantFrom('coins', 'gems', 'x y', 'q"/é', 'NULL'), amount, { maxKeys: 3 }),
      scope: fc.option(scope, { nil: undefined }),
      order,
      meta,
    })
    .map(entryOf);

const readOps = (owners: fc.Arbitrary<string>): fc.Arbitrary<Op>[] => [
  owners.map((o): Op => ({ kind: 'balances', owner: o })),
  owners.map((o): Op => ({ kind: 'window', owner: o })),
  scope.map((s): Op => ({ kind: 'totals', scope: s })),
  fc
    .record({
      owner: fc.option(owners, { nil: undefined }),
      scope: fc.option(scope, { nil: undefined }),
      after: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
      limit: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
    })
    .map(
      (q): Op => ({
        kind: 'journal',
        ...(q.owner !== undefined && { owner: q.owner }),
        ...(q.scope !== undefined && { scope: q.scope }),
        // `after` pages one owner's journal (seqs are per owner on every store).
        ...(q.owner !== undefined && q.after !== undefined && { after: q.after }),
        ...(q.limit !== undefined && { limit: q.limit }),
      }),
    ),
];

const ops = (owners: fc.Arbitrary<string>): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 8, arbitrary: entry(owners).map((e): Op => ({ kind: 'apply', entry: e })) },
    { weight: 2, arbitrary: entry(owners).map((e): Op => ({ kind: 'resolve', entry: e })) },
    ...readOps(owners).map((arbitrary) => ({ weight: 1, arbitrary })),
  );

async function runOp(ledger: ReturnType<typeof createLedger>, o: Op): Promise<unknown> {
  switch (o.kind) {
    case 'apply':
    case 'resolve': {
      const r = await ledger[o.kind](o.entry);
      return { outcome: r.outcome, balances: r.balances, seq: r.outcome === 'applied' ? r.seq : undefined };
    }
    case 'balances':
      return ledger.balances(o.owner);
    case 'window':
      return ledger.window(o.owner);
    case 'totals':
      return ledger.totals(o.scope);
    case 'journal':
      // Seqs are numbered per owner on both stores; only the time stamp differs.
      // The op without its `kind`: a query holds only the journal's own fields.
      return (await ledger.journal({ owner: o.owner, scope: o.scope, after: o.after, limit: o.limit })).map(
        ({ at: _at, ...e }) => e,
      );
  }
}

/** How often each outcome was answered (by either operation), over a whole property. */
type Tally = Record<string, number>;

/** Runs `list` on both ledgers (reopened halfway with capacity `later`), comparing every answer. */
async function compare(
  tally: Tally,
  stores: { model: Store; real: Store },
  name: string,
  capacity: number,
  later: number,
  horizon: boolean,
  list: Op[],
): Promise<void> {
  let model = createLedger({ store: stores.model, capacity, horizon, name });
  let real = createLedger({ store: stores.real, capacity, horizon, name });
  for (const [i, o] of list.entries()) {
    if (i === list.length >> 1) {
      // Halfway, the same ledger reopened with another capacity (a redeploy): the window keeps
      // every entry and shrinks, one eviction at a time, at its next insert.
      model = createLedger({ store: stores.model, capacity: later, horizon, name });
      real = createLedger({ store: stores.real, capacity: later, horizon, name });
    }
    const got = await runOp(real, o);
    expect(got, `op ${i} ${o.kind}`).toEqual(await runOp(model, o));
    const outcome = (got as { outcome?: string }).outcome;
    if (outcome !== undefined) tally[`${o.kind} ${outcome}`] = (tally[`${o.kind} ${outcome}`] ?? 0) + 1;
  }
}

describe('Postgres ledger against the memory model', () => {
  const pool = testPool(4);
  const schema = runSchema('ledger_model');
  const keepAll = createPostgresStore({ pool, schema });
  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  it('random applies, resolves and reads give the same outcomes, balances, windows, journals and totals', async () => {
    let run = 0;
    const tally: Tally = {};
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 5 }),
        fc.boolean(),
        fc.array(ops(owner), { minLength: 10, maxLength: 60 }),
        async (capacity, later, horizon, list) => {
          await compare(
            tally,
            { model: memoryStore(), real: keepAll },
            `run${run++}`,
            capacity,
            later,
            horizon,
            list,
          );
        },
      ),
      { numRuns: 80 },
    );
    // The runs reached every answer, often (a horizon off by one shows only in stale answers).
    for (const k of [
      'apply applied',
      'apply duplicate',
      'apply stale',
      'resolve applied',
      'resolve duplicate',
    ]) {
      expect(tally[k], k).toBeGreaterThan(10);
    }
  });

  it('with journal retention (one owner: per owner here is per ledger in memory), the same answers, resolves included', async () => {
    let run = 0;
    const tally: Tally = {};
    const stores = new Map<number, Store>();
    const storeKeeping = (keep: number): Store => {
      let store = stores.get(keep);
      if (store === undefined) {
        store = createPostgresStore({ pool, schema, journal: { maxEntriesPerOwner: keep } });
        stores.set(keep, store);
      }
      return store;
    };
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        fc.integer({ min: 0, max: 4 }),
        fc.array(ops(fc.constant('p1')), { minLength: 10, maxLength: 60 }),
        async (capacity, later, horizon, keep, list) => {
          const stores = { model: memoryStore({ journal: { maxEntries: keep } }), real: storeKeeping(keep) };
          await compare(tally, stores, `keep${run++}`, capacity, later, horizon, list);
        },
      ),
      { numRuns: 80 },
    );
    for (const k of ['apply stale', 'resolve applied', 'resolve duplicate', 'resolve unknown']) {
      expect(tally[k], k).toBeGreaterThan(10);
    }
  });

  it('every stale answer resolved: never booked twice, the resolve model, and the same outcomes and state as memory', async () => {
    let runs = 0;
    let stale = 0;
    const resolved: Record<string, number> = { applied: 0, duplicate: 0, unknown: 0 };
    await fc.assert(
      fc.asyncProperty(scenarios(['p1']), async (s) => {
        const name = `m${runs++}`;
        // One owner: the memory store's retention per ledger drops what Postgres's per owner drops.
        const memory = await runScenario(
          memoryStore({ journal: { maxEntries: s.keep ?? Number.POSITIVE_INFINITY } }),
          name,
          s,
          false,
        );
        const journal = s.keep === undefined ? {} : { maxEntriesPerOwner: s.keep };
        const real = await runScenario(createPostgresStore({ pool, schema, journal }), name, s, true);
        expect(real).toEqual(memory);
        stale += real.stale;
        for (const [k, v] of Object.entries(real.resolved)) resolved[k] = (resolved[k] ?? 0) + v;
      }),
      { numRuns: 100 },
    );
    // The runs reached what they are about: many stale answers, every resolve outcome.
    expect(stale).toBeGreaterThan(300);
    for (const outcome of ['applied', 'duplicate', 'unknown']) expect(resolved[outcome]).toBeGreaterThan(10);
  });

  it('several owners with retention per owner: every resolve as the model says (perOwner), never booked twice', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(scenarios(['p1', 'p2', 'p3']), async (s) => {
        const journal = s.keep === undefined ? {} : { maxEntriesPerOwner: s.keep };
        await runScenario(createPostgresStore({ pool, schema, journal }), `o${runs++}`, s, true);
      }),
      { numRuns: 40 },
    );
  });
});
