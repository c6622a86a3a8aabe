import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedger, type LedgerEntry, memoryStore, type Store } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

type Op =
  | { kind: 'apply'; entry: LedgerEntry }
  | { kind: 'balances'; owner: string }
  | { kind: 'window'; owner: string }
  | { kind: 'totals'; scope: string }
  | { kind: 'journal'; owner?: string; scope?: string; after?: number; limit?: number };

const owner = fc.constantFrom('p1', 'p2', 'p{x}', 'a:b', 'ü');
const scope = fc.constantFrom('r1', 'r2', 'room|9', 'ß');
// Small amounts hit the script's fast path; huge ones (beyond 64 bits) its decimal-string path.
const amount = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map(BigInt),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }),
  // Around the fast path's edge: 15 digits and beyond, 2^53, 2^63 (where HINCRBY would stop).
  fc.bigInt({ min: -(10n ** 19n), max: 10n ** 19n }),
  fc.bigInt({ min: 10n ** 14n, max: 10n ** 16n }),
  fc.constantFrom(
    999_999_999_999_999n,
    -999_999_999_999_999n,
    1_000_000_000_000_000n,
    2n ** 53n + 1n,
    2n ** 63n,
  ),
);
const apply: fc.Arbitrary<Op> = fc
  .record({
    owner,
    // Plain ids, and ones that stress the Redis state string: prefixes of each other, the
    // separators of its parts, NUL, U+00FF (bytes C3 BF), U+FFFD (what a lone surrogate would become).
    signature: fc.constantFrom(
      's1',
      's2',
      's3',
      's4',
      'a',
      'ab',
      'b,a',
      'x|y',
      ',',
      '\u0000',
      'ÿ',
      '\ufffd',
      '1',
    ),
    // Plain names ('coins', 'x-y_1') are added as text by the script when alone; the others (a
    // space, a quote, a slash and a non-ASCII letter, which cjson escapes) go through cjson.
    deltas: fc.dictionary(fc.constantFrom('coins', 'gems', 'x-y_1', 'x y', 'q"/é'), amount, { maxKeys: 3 }),
    scope: fc.option(scope, { nil: undefined }),
    order: fc.option(
      fc.oneof(fc.integer({ min: -20, max: 20 }), fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n })),
      {
        nil: undefined,
      },
    ),
  })
  .map((r) => {
    const entry: LedgerEntry = { owner: r.owner, signature: r.signature, deltas: r.deltas };
    if (r.scope !== undefined) entry.scope = r.scope;
    if (r.order !== undefined) entry.order = r.order;
    return { kind: 'apply', entry };
  });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: apply },
  { weight: 1, arbitrary: owner.map((o): Op => ({ kind: 'balances', owner: o })) },
  { weight: 1, arbitrary: owner.map((o): Op => ({ kind: 'window', owner: o })) },
  { weight: 1, arbitrary: scope.map((s): Op => ({ kind: 'totals', scope: s })) },
  {
    weight: 1,
    arbitrary: fc
      .record({
        owner: fc.option(owner, { nil: undefined }),
        scope: fc.option(scope, { nil: undefined }),
        after: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
        limit: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
      })
      .map(
        (q): Op => ({
          kind: 'journal',
          ...(q.owner && { owner: q.owner }),
          ...(q.scope && { scope: q.scope }),
          // `after` pages one owner's journal (seqs are per owner on every store).
          ...(q.owner !== undefined && q.after !== undefined && { after: q.after }),
          ...(q.limit !== undefined && { limit: q.limit }),
        }),
      ),
  },
);

async function runOp(ledger: ReturnType<typeof createLedger>, o: Op): Promise<unknown> {
  switch (o.kind) {
    case 'apply': {
      const r = await ledger.apply(o.entry);
      return { outcome: r.outcome, balances: r.balances, seq: r.seq };
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

for (const mode of ['standalone', 'cluster'] as const) {
  describe(`Redis store (${mode}) against the memory model`, () => {
    const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
    const prefix = runPrefix('model');
    const redis: Store = createRedisStore({ client, prefix });
    afterAll(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });

    it('random command sequences give the same outcomes, balances, windows, journals and totals', async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 5 }),
          fc.integer({ min: 1, max: 5 }),
          fc.boolean(),
          fc.array(op, { minLength: 1, maxLength: 40 }),
          async (capacity, later, horizon, ops) => {
            const name = `run${run++}`;
            const memory = memoryStore();
            let model = createLedger({ store: memory, capacity, horizon, name });
            let real = createLedger({ store: redis, capacity, horizon, name });
            for (const [i, o] of ops.entries()) {
              if (i === ops.length >> 1) {
                // Halfway, the same ledger reopened with another capacity (a redeploy).
                model = createLedger({ store: memory, capacity: later, horizon, name });
                real = createLedger({ store: redis, capacity: later, horizon, name });
              }
              expect(await runOp(real, o), `op ${i} ${o.kind}`).toEqual(await runOp(model, o));
            }
          },
        ),
        { numRuns: mode === 'cluster' ? 40 : 80 },
      );
    });

    it('concurrent applies (batched into one script per slot) give the outcomes of applying them in call order', async () => {
      let run = 0;
      const applies = apply as fc.Arbitrary<Extract<Op, { kind: 'apply' }>>;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 5 }),
          fc.array(fc.array(applies, { minLength: 1, maxLength: 30 }), { minLength: 1, maxLength: 6 }),
          async (capacity, groups) => {
            const name = `batch${run++}`;
            const model = createLedger({ store: memoryStore(), capacity, name });
            const real = createLedger({ store: redis, capacity, name });
            for (const group of groups) {
              const [got, want] = await Promise.all([
                Promise.all(group.map((o) => runOp(real, o))),
                Promise.all(group.map((o) => runOp(model, o))),
              ]);
              expect(got).toEqual(want);
            }
            for (const o of ['p1', 'p2', 'p{x}', 'a:b', 'ü']) {
              expect(await real.window(o)).toEqual(await model.window(o));
            }
          },
        ),
        { numRuns: 60 },
      );
    });
  });
}
