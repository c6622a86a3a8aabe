/**
 * The ledger and window conformance cases, as plain data: every store must give these outcomes.
 * Amounts are decimal strings (JSON has no bigint); they are turned into bigints when run.
 * Signatures are short opaque strings here: a store must not care what they look like.
 *
 * Long by design: a data table, one case after another, read case by case rather than top to
 * bottom; splitting it would only scatter the cases.
 */

/** One step of a case. */
/** A ledger entry as a case writes it: amounts and the order as decimal strings (JSON-safe). */
export interface CaseEntry {
  owner: string;
  signature: string;
  deltas: Record<string, string>;
  scope?: string;
  order?: string;
  meta?: unknown;
}

export type ConformanceStep =
  | {
      op: 'apply';
      entry: CaseEntry;
      expect: { outcome: 'applied' | 'duplicate' | 'stale'; balances: Record<string, string> };
    }
  | { op: 'balances'; owner: string; expect: Record<string, string> }
  | { op: 'window'; owner: string; expect: { signatures: string[]; horizon?: string } }
  | {
      op: 'journal';
      query: { owner?: string; scope?: string; after?: number; limit?: number };
      expect: { signatures: string[]; scopes?: (string | null)[]; metas?: unknown[] };
    }
  | { op: 'journal-pages'; owner: string; pageSize: number; expect: string[][] }
  | { op: 'totals'; scope: string; expect: Record<string, string> }
  | {
      op: 'invalid';
      /** Which call gets the entry: `apply` (the default) or `resolve`. */
      via?: 'apply' | 'resolve';
      entry: Record<string, unknown>;
      code: string;
    }
  | {
      /** `Ledger.resolve` of the entry: its outcome and the owner's balances after it. */
      op: 'resolve';
      entry: CaseEntry;
      expect: { outcome: 'applied' | 'duplicate' | 'unknown'; balances: Record<string, string> };
    }
  | {
      /**
       * Calls started together, none waiting for another (one `Promise.all`), their copies
       * interleaved: every entry's first copy, then every second copy, and so on. Each entry's
       * `copies` calls (`via` apply, the default, or resolve) must answer `applied` exactly once
       * and `duplicate` otherwise (`expect: 'once'`), or `duplicate` every time (`'duplicate'`: it
       * was booked before the race). Once all settled, each named owner's balances and the
       * signatures its journal holds (in any order: a race has no order) must be as given.
       */
      op: 'race';
      entries: {
        via?: 'apply' | 'resolve';
        copies: number;
        expect: 'once' | 'duplicate';
        owner: string;
        signature: string;
        deltas: Record<string, string>;
        scope?: string;
        order?: string;
      }[];
      expect: { balances: Record<string, Record<string, string>>; journal: Record<string, string[]> };
    };

/** One case: a fresh ledger with `capacity` (and `horizon`), then the steps in order. */
export interface ConformanceCase {
  name: string;
  /** Which rule of DESIGN §3.2–3.3 the case pins down. */
  rule: string;
  capacity: number;
  horizon?: boolean;
  /**
   * The journal retention the case needs, in entries per owner (each such case books for one
   * owner, so a retention per ledger, as the memory store's, is the same). A case with it belongs
   * to the `ledger-retention` suite and runs on the store `options.retention(n)` makes; a case
   * without it runs on the store under test, whose retention it never reaches.
   */
  retention?: number;
  steps: ConformanceStep[];
}

type Apply = Extract<ConformanceStep, { op: 'apply' }>;
const apply = (
  owner: string,
  signature: string,
  deltas: Record<string, string>,
  outcome: Apply['expect']['outcome'],
  balances: Record<string, string>,
  extra: { scope?: string; order?: string; meta?: unknown } = {},
): Apply => ({ op: 'apply', entry: { owner, signature, deltas, ...extra }, expect: { outcome, balances } });

type Resolve = Extract<ConformanceStep, { op: 'resolve' }>;
const resolve = (
  owner: string,
  signature: string,
  deltas: Record<string, string>,
  outcome: Resolve['expect']['outcome'],
  balances: Record<string, string>,
  extra: { scope?: string; order?: string; meta?: unknown } = {},
): Resolve => ({
  op: 'resolve',
  entry: { owner, signature, deltas, ...extra },
  expect: { outcome, balances },
});

/**
 * The cases. Add to them when a rule is added; never edit one to make a store pass. Frozen all the
 * way down (see deepFreeze): `run` reads these very objects, so a caller's change would change
 * what every later run checks.
 */
export const cases: readonly ConformanceCase[] = deepFreeze([
  {
    name: 'fresh-then-duplicate',
    rule: 'a present signature is a duplicate and changes nothing',
    capacity: 4,
    steps: [
      apply('p1', 's1', { coins: '100' }, 'applied', { coins: '100' }),
      apply('p1', 's1', { coins: '100' }, 'duplicate', { coins: '100' }),
      apply('p1', 's1', { coins: '999' }, 'duplicate', { coins: '100' }),
      { op: 'window', owner: 'p1', expect: { signatures: ['s1'] } },
      { op: 'journal', query: { owner: 'p1' }, expect: { signatures: ['s1'] } },
    ],
  },
  {
    name: 'fifo-not-lru',
    rule: 'a duplicate does not refresh its position; the oldest is evicted one at a time',
    capacity: 2,
    steps: [
      apply('p1', 'a', { coins: '1' }, 'applied', { coins: '1' }),
      apply('p1', 'b', { coins: '2' }, 'applied', { coins: '3' }),
      apply('p1', 'a', { coins: '1' }, 'duplicate', { coins: '3' }),
      apply('p1', 'c', { coins: '4' }, 'applied', { coins: '7' }),
      { op: 'window', owner: 'p1', expect: { signatures: ['b', 'c'] } },
      // Without orders the window cannot know `a` was seen: the capacity bound is the whole defence.
      apply('p1', 'a', { coins: '1' }, 'applied', { coins: '8' }),
      { op: 'window', owner: 'p1', expect: { signatures: ['c', 'a'] } },
    ],
  },
  {
    name: 'horizon-stale',
    rule: 'an absent signature with order at or below the highest evicted order is stale and not applied',
    capacity: 2,
    steps: [
      apply('p1', 'a', { coins: '10' }, 'applied', { coins: '10' }, { order: '1' }),
      apply('p1', 'b', { coins: '20' }, 'applied', { coins: '30' }, { order: '2' }),
      apply('p1', 'c', { coins: '30' }, 'applied', { coins: '60' }, { order: '3' }),
      { op: 'window', owner: 'p1', expect: { signatures: ['b', 'c'], horizon: '1' } },
      apply('p1', 'a', { coins: '10' }, 'stale', { coins: '60' }, { order: '1' }),
      apply('p1', 'z', { coins: '5' }, 'stale', { coins: '60' }, { order: '0' }),
      apply('p1', 'b', { coins: '20' }, 'duplicate', { coins: '60' }, { order: '2' }),
      apply('p1', 'd', { coins: '1' }, 'applied', { coins: '61' }, { order: '4' }),
      { op: 'window', owner: 'p1', expect: { signatures: ['c', 'd'], horizon: '2' } },
      // An entry without an order is not judged by the horizon.
      apply('p1', 'e', { coins: '1' }, 'applied', { coins: '62' }),
      { op: 'window', owner: 'p1', expect: { signatures: ['d', 'e'], horizon: '3' } },
      { op: 'journal', query: { owner: 'p1' }, expect: { signatures: ['a', 'b', 'c', 'd', 'e'] } },
    ],
  },
  {
    name: 'horizon-off',
    rule: 'with horizon off, orders are kept but never make an entry stale',
    capacity: 1,
    horizon: false,
    steps: [
      apply('p1', 'a', { coins: '1' }, 'applied', { coins: '1' }, { order: '5' }),
      apply('p1', 'b', { coins: '1' }, 'applied', { coins: '2' }, { order: '6' }),
      apply('p1', 'a', { coins: '1' }, 'applied', { coins: '3' }, { order: '5' }),
    ],
  },
  {
    name: 'horizon-bigint-order',
    rule: 'orders beyond 2^53 compare exactly',
    capacity: 1,
    steps: [
      apply('p1', 'a', {}, 'applied', {}, { order: '9007199254740993' }),
      apply('p1', 'b', {}, 'applied', {}, { order: '9007199254740994' }),
      apply('p1', 'c', {}, 'stale', {}, { order: '9007199254740993' }),
      apply('p1', 'd', {}, 'applied', {}, { order: '9007199254740995' }),
      { op: 'window', owner: 'p1', expect: { signatures: ['d'], horizon: '9007199254740994' } },
    ],
  },
  {
    name: 'deltas-all-or-nothing',
    rule: 'every field of deltas changes together; negative and bigint amounts are exact',
    capacity: 4,
    steps: [
      apply('p1', 's1', { coins: '-300', gems: '2' }, 'applied', { coins: '-300', gems: '2' }),
      apply('p1', 's2', { coins: '9007199254740993' }, 'applied', { coins: '9007199254740693', gems: '2' }),
      apply('p1', 's2', { coins: '1', gems: '1' }, 'duplicate', { coins: '9007199254740693', gems: '2' }),
      apply('p1', 's3', {}, 'applied', { coins: '9007199254740693', gems: '2' }),
      { op: 'balances', owner: 'p1', expect: { coins: '9007199254740693', gems: '2' } },
      { op: 'balances', owner: 'nobody', expect: {} },
    ],
  },
  {
    name: 'owners-independent',
    rule: 'each owner has its own window and balances',
    capacity: 1,
    steps: [
      apply('p1', 's', { coins: '5' }, 'applied', { coins: '5' }),
      apply('p2', 's', { coins: '7' }, 'applied', { coins: '7' }),
      apply('p1', 't', { coins: '1' }, 'applied', { coins: '6' }),
      apply('p2', 's', { coins: '7' }, 'duplicate', { coins: '7' }),
      { op: 'window', owner: 'p2', expect: { signatures: ['s'] } },
      { op: 'window', owner: 'unknown', expect: { signatures: [] } },
    ],
  },
  {
    name: 'cross-room-late-final',
    rule: 'a late final from the old room is credited once, under the old room (the seed case, capacity 4)',
    capacity: 4,
    steps: [
      apply('p1', 'A|1|+50|i', { coins: '50' }, 'applied', { coins: '50' }, { scope: 'A', order: '10' }),
      apply('p1', 'B|7|-20|i', { coins: '-20' }, 'applied', { coins: '30' }, { scope: 'B', order: '30' }),
      apply('p1', 'A|1|-5|f', { coins: '-5' }, 'applied', { coins: '25' }, { scope: 'A', order: '20' }),
      apply('p1', 'A|1|+50|i', { coins: '50' }, 'duplicate', { coins: '25' }, { scope: 'A', order: '10' }),
      apply('p1', 'B|7|+80|f', { coins: '80' }, 'applied', { coins: '105' }, { scope: 'B', order: '40' }),
      apply('p1', 'A|1|-5|f', { coins: '-5' }, 'duplicate', { coins: '105' }, { scope: 'A', order: '20' }),
      { op: 'totals', scope: 'A', expect: { coins: '45' } },
      { op: 'totals', scope: 'B', expect: { coins: '60' } },
      { op: 'totals', scope: 'C', expect: {} },
      {
        op: 'journal',
        query: { scope: 'A' },
        expect: { signatures: ['A|1|+50|i', 'A|1|-5|f'], scopes: ['A', 'A'] },
      },
    ],
  },
  {
    name: 'journal-query',
    rule: 'the journal keeps applied entries oldest first, filtered by owner and scope, paged by seq',
    capacity: 4,
    steps: [
      apply('p1', 'a', { coins: '1' }, 'applied', { coins: '1' }, { scope: 'r1', meta: { n: 1 } }),
      apply('p2', 'b', { coins: '2' }, 'applied', { coins: '2' }, { scope: 'r1' }),
      apply('p1', 'c', { coins: '3' }, 'applied', { coins: '4' }, { scope: 'r2', meta: ['x', null] }),
      apply('p1', 'c', { coins: '3' }, 'duplicate', { coins: '4' }, { scope: 'r2' }),
      apply('p2', 'd', { coins: '4' }, 'applied', { coins: '6' }),
      {
        op: 'journal',
        query: {},
        expect: { signatures: ['a', 'b', 'c', 'd'], scopes: ['r1', 'r1', 'r2', null] },
      },
      {
        op: 'journal',
        query: { owner: 'p1' },
        expect: { signatures: ['a', 'c'], metas: [{ n: 1 }, ['x', null]] },
      },
      { op: 'journal', query: { scope: 'r1' }, expect: { signatures: ['a', 'b'] } },
      { op: 'journal', query: { owner: 'p2', scope: 'r1' }, expect: { signatures: ['b'] } },
      { op: 'journal', query: { limit: 2 }, expect: { signatures: ['a', 'b'] } },
      { op: 'journal-pages', owner: 'p1', pageSize: 1, expect: [['a'], ['c'], []] },
      { op: 'journal-pages', owner: 'p2', pageSize: 5, expect: [['b', 'd'], []] },
      { op: 'totals', scope: 'r1', expect: { coins: '3' } },
    ],
  },
  {
    name: 'invalid-input-changes-nothing',
    rule: 'bad input is a typed error naming the field, and changes no state',
    capacity: 2,
    steps: [
      apply('p1', 'a', { coins: '1' }, 'applied', { coins: '1' }),
      {
        op: 'invalid',
        entry: { owner: 'p1', signature: 'b', deltas: { coins: 1.5 } },
        code: 'ERR_INVALID_ARGUMENT',
      },
      {
        op: 'invalid',
        entry: { owner: 'p1', signature: 'b', deltas: { coins: Number.NaN } },
        code: 'ERR_INVALID_ARGUMENT',
      },
      {
        op: 'invalid',
        entry: { owner: 'p1', signature: 'b', deltas: { coins: '1' } },
        code: 'ERR_INVALID_ARGUMENT',
      },
      { op: 'invalid', entry: { signature: 'b', deltas: { coins: 1 } }, code: 'ERR_INVALID_ARGUMENT' },
      { op: 'invalid', entry: { owner: 'p1', deltas: { coins: 1 } }, code: 'ERR_INVALID_ARGUMENT' },
      { op: 'invalid', entry: { owner: 'p1', signature: 'b' }, code: 'ERR_INVALID_ARGUMENT' },
      {
        op: 'invalid',
        entry: { owner: 'p1', signature: 'b', deltas: {}, order: 1.5 },
        code: 'ERR_INVALID_ARGUMENT',
      },
      {
        op: 'invalid',
        entry: { owner: 'p1', signature: 'b', deltas: {}, scope: '' },
        code: 'ERR_INVALID_ARGUMENT',
      },
      { op: 'window', owner: 'p1', expect: { signatures: ['a'] } },
      { op: 'balances', owner: 'p1', expect: { coins: '1' } },
      { op: 'journal', query: { owner: 'p1' }, expect: { signatures: ['a'] } },
    ],
  },
  // The cases below run on a store's own journal retention: they keep fewer entries per owner
  // (and per ledger) than any retention drops, so nothing is dropped and absence proves an entry
  // new. What a store answers once retention dropped entries (`unknown`) needs a store made with
  // a small retention: the `ledger-retention` suite ({@link retentionCases}).
  {
    name: 'resolve-stale-repeat',
    rule: 'resolve of a stale repeat that the journal holds is a duplicate and changes nothing',
    capacity: 1,
    steps: [
      apply('p1', 'a', { coins: '10' }, 'applied', { coins: '10' }, { order: '1', scope: 'r' }),
      apply('p1', 'b', { coins: '20' }, 'applied', { coins: '30' }, { order: '2', scope: 'r' }),
      apply('p1', 'a', { coins: '10' }, 'stale', { coins: '30' }, { order: '1', scope: 'r' }),
      resolve('p1', 'a', { coins: '10' }, 'duplicate', { coins: '30' }, { order: '1', scope: 'r' }),
      // The window's entry too: a duplicate (what resolve finds first).
      resolve('p1', 'b', { coins: '20' }, 'duplicate', { coins: '30' }, { order: '2', scope: 'r' }),
      { op: 'window', owner: 'p1', expect: { signatures: ['b'], horizon: '1' } },
      { op: 'journal', query: { owner: 'p1' }, expect: { signatures: ['a', 'b'] } },
      { op: 'totals', scope: 'r', expect: { coins: '30' } },
    ],
  },
  {
    name: 'resolve-stale-new',
    rule: 'resolve of a stale entry the journal proves new applies it once, as apply applies a fresh one, entering the window',
    capacity: 2,
    steps: [
      apply('p1', 'a', { coins: '1' }, 'applied', { coins: '1' }, { order: '10' }),
      apply('p1', 'b', { coins: '2' }, 'applied', { coins: '3' }, { order: '20' }),
      apply('p1', 'c', { coins: '4' }, 'applied', { coins: '7' }, { order: '30' }),
      apply('p1', 'late', { coins: '8', gems: '1' }, 'stale', { coins: '7' }, { order: '5', scope: 'r' }),
      resolve(
        'p1',
        'late',
        { coins: '8', gems: '1' },
        'applied',
        { coins: '15', gems: '1' },
        { order: '5', scope: 'r', meta: { why: 'late' } },
      ),
      // The newest in the window, evicting the oldest (whose order raises the horizon).
      { op: 'window', owner: 'p1', expect: { signatures: ['c', 'late'], horizon: '20' } },
      apply(
        'p1',
        'late',
        { coins: '8', gems: '1' },
        'duplicate',
        { coins: '15', gems: '1' },
        { order: '5', scope: 'r' },
      ),
      resolve(
        'p1',
        'late',
        { coins: '8', gems: '1' },
        'duplicate',
        { coins: '15', gems: '1' },
        { order: '5', scope: 'r' },
      ),
      {
        op: 'journal',
        query: { owner: 'p1' },
        expect: {
          signatures: ['a', 'b', 'c', 'late'],
          metas: [undefined, undefined, undefined, { why: 'late' }],
        },
      },
      { op: 'totals', scope: 'r', expect: { coins: '8', gems: '1' } },
      // Pushed out of the window, it is stale again, and the journal still settles it.
      apply('p1', 'd', { coins: '16' }, 'applied', { coins: '31', gems: '1' }, { order: '40' }),
      apply('p1', 'e', { coins: '32' }, 'applied', { coins: '63', gems: '1' }, { order: '50' }),
      apply(
        'p1',
        'late',
        { coins: '8', gems: '1' },
        'stale',
        { coins: '63', gems: '1' },
        { order: '5', scope: 'r' },
      ),
      resolve(
        'p1',
        'late',
        { coins: '8', gems: '1' },
        'duplicate',
        { coins: '63', gems: '1' },
        { order: '5', scope: 'r' },
      ),
    ],
  },
  {
    name: 'resolve-not-stale',
    rule: 'resolve of an entry that is not stale decides from the journal alone: a new owner, an order-less entry, horizon off',
    capacity: 1,
    horizon: false,
    steps: [
      resolve('p1', 'a', { coins: '5' }, 'applied', { coins: '5' }),
      resolve('p1', 'a', { coins: '5' }, 'duplicate', { coins: '5' }),
      apply('p1', 'a', { coins: '5' }, 'duplicate', { coins: '5' }),
      apply('p1', 'b', { coins: '1' }, 'applied', { coins: '6' }, { order: '3' }),
      // `a` left the window; the journal holds it.
      resolve('p1', 'a', { coins: '5' }, 'duplicate', { coins: '6' }),
      resolve('p1', 'c', { coins: '1' }, 'applied', { coins: '7' }, { order: '1' }),
      { op: 'window', owner: 'p1', expect: { signatures: ['c'] } },
      resolve('p2', 'a', {}, 'applied', {}),
      { op: 'journal', query: {}, expect: { signatures: ['a', 'b', 'c', 'a'] } },
    ],
  },
  {
    name: 'resolve-invalid-input',
    rule: 'resolve validates as apply does: bad input is a typed error naming the field, and changes no state',
    capacity: 2,
    steps: [
      apply('p1', 'a', { coins: '1' }, 'applied', { coins: '1' }),
      {
        op: 'invalid',
        via: 'resolve',
        entry: { owner: 'p1', signature: 'b', deltas: { coins: 1.5 } },
        code: 'ERR_INVALID_ARGUMENT',
      },
      { op: 'invalid', via: 'resolve', entry: { owner: 'p1', deltas: {} }, code: 'ERR_INVALID_ARGUMENT' },
      {
        op: 'invalid',
        via: 'resolve',
        entry: { owner: 'p1', signature: 'b', deltas: {}, order: 1.5 },
        code: 'ERR_INVALID_ARGUMENT',
      },
      { op: 'balances', owner: 'p1', expect: { coins: '1' } },
      { op: 'journal', query: { owner: 'p1' }, expect: { signatures: ['a'] } },
    ],
  },
  // Concurrency: a store's apply and resolve are each one atomic step, so calls racing on one
  // owner decide one after the other. A store that checks the window in one round trip and books
  // in another books racing repeats each once: these cases see it where a sequence of calls never
  // can. The capacities hold every signature of the race, so no eviction makes an outcome depend
  // on which call came first.
  {
    name: 'concurrent-repeats',
    rule: 'concurrent applies of one signature to one owner, mixed with other signatures and owners: exactly one is applied, the others are duplicates, balances exact',
    capacity: 64,
    steps: [
      apply('p1', 'before', { coins: '1' }, 'applied', { coins: '1' }, { scope: 'r' }),
      {
        op: 'race',
        entries: [
          {
            owner: 'p1',
            signature: 'x',
            deltas: { coins: '100', gems: '1' },
            scope: 'r',
            copies: 16,
            expect: 'once',
          },
          ...['y1', 'y2', 'y3', 'y4', 'y5', 'y6'].map((signature) => ({
            owner: 'p1',
            signature,
            deltas: { coins: '1' },
            copies: 2,
            expect: 'once' as const,
          })),
          {
            owner: 'p1',
            signature: 'before',
            deltas: { coins: '1' },
            scope: 'r',
            copies: 4,
            expect: 'duplicate',
          },
          { owner: 'p2', signature: 'x', deltas: { coins: '7' }, scope: 'r', copies: 8, expect: 'once' },
        ],
        expect: {
          balances: { p1: { coins: '107', gems: '1' }, p2: { coins: '7' } },
          journal: { p1: ['before', 'x', 'y1', 'y2', 'y3', 'y4', 'y5', 'y6'], p2: ['x'] },
        },
      },
      apply('p1', 'x', { coins: '100', gems: '1' }, 'duplicate', { coins: '107', gems: '1' }, { scope: 'r' }),
      { op: 'totals', scope: 'r', expect: { coins: '108', gems: '1' } },
    ],
  },
  {
    name: 'concurrent-resolves',
    rule: 'concurrent resolves of one stale entry the journal proves new: exactly one is applied, the others are duplicates',
    capacity: 1,
    steps: [
      apply('p1', 'a', { coins: '1' }, 'applied', { coins: '1' }, { order: '1' }),
      apply('p1', 'b', { coins: '2' }, 'applied', { coins: '3' }, { order: '2' }),
      apply('p1', 'late', { coins: '4' }, 'stale', { coins: '3' }, { order: '0' }),
      {
        op: 'race',
        entries: [
          {
            via: 'resolve',
            owner: 'p1',
            signature: 'late',
            deltas: { coins: '4' },
            order: '0',
            copies: 8,
            expect: 'once',
          },
          {
            via: 'resolve',
            owner: 'p1',
            signature: 'a',
            deltas: { coins: '1' },
            order: '1',
            copies: 4,
            expect: 'duplicate',
          },
          {
            via: 'resolve',
            owner: 'p2',
            signature: 'n',
            deltas: { coins: '5' },
            order: '9',
            copies: 4,
            expect: 'once',
          },
        ],
        expect: {
          balances: { p1: { coins: '7' }, p2: { coins: '5' } },
          journal: { p1: ['a', 'b', 'late'], p2: ['n'] },
        },
      },
      apply('p1', 'late', { coins: '4' }, 'duplicate', { coins: '7' }, { order: '0' }),
    ],
  },
]);

/**
 * The `ledger-retention` cases: what `resolve` answers once journal retention dropped entries.
 * Each runs on a store that keeps only the newest `retention` journal entries per owner (the
 * kit's `retention` option makes it). Where retention dropped the entry that would prove a
 * signature new, the answer is `unknown` and nothing is booked: booking it could book a repeat
 * twice, which is the failure the ledger exists to prevent.
 */
export const retentionCases: readonly ConformanceCase[] = deepFreeze([
  {
    name: 'retention-unknown',
    rule: 'resolve answers unknown, booking nothing, where retention dropped what would prove the entry new; applied only above every dropped order (or order-less while no order-less entry was dropped)',
    capacity: 1,
    retention: 2,
    steps: [
      apply('p1', 'a', { coins: '1' }, 'applied', { coins: '1' }, { order: '1', scope: 'r' }),
      apply('p1', 'b', { coins: '2' }, 'applied', { coins: '3' }, { order: '2', scope: 'r' }),
      apply('p1', 'c', { coins: '4' }, 'applied', { coins: '7' }, { order: '3', scope: 'r' }),
      apply('p1', 'd', { coins: '8' }, 'applied', { coins: '15' }, { order: '4', scope: 'r' }),
      // The newest two are kept: `a` and `b` (orders up to 2) were dropped.
      { op: 'journal', query: { owner: 'p1' }, expect: { signatures: ['c', 'd'] } },
      { op: 'window', owner: 'p1', expect: { signatures: ['d'], horizon: '3' } },
      // Applied once, its proof gone: a repeat must not be booked again.
      resolve('p1', 'a', { coins: '1' }, 'unknown', { coins: '15' }, { order: '1', scope: 'r' }),
      // Never applied, but at a dropped order: nothing tells it from a dropped entry.
      resolve('p1', 'x', { coins: '16' }, 'unknown', { coins: '15' }, { order: '2', scope: 'r' }),
      resolve('p1', 'c', { coins: '4' }, 'duplicate', { coins: '15' }, { order: '3', scope: 'r' }),
      // Above every dropped order and absent: new. Booking it drops `c`.
      resolve('p1', 'n', { coins: '32' }, 'applied', { coins: '47' }, { order: '3', scope: 'r' }),
      resolve('p1', 'c', { coins: '4' }, 'unknown', { coins: '47' }, { order: '3', scope: 'r' }),
      // Entries without an order: provable only while no order-less entry was dropped.
      apply('p1', 'u', { coins: '64' }, 'applied', { coins: '111' }, { scope: 'r' }),
      resolve('p1', 'v', { coins: '128' }, 'applied', { coins: '239' }, { scope: 'r' }),
      apply('p1', 'w', { coins: '256' }, 'applied', { coins: '495' }, { order: '10', scope: 'r' }),
      // `u` (order-less) was dropped by `w`.
      resolve('p1', 'u', { coins: '64' }, 'unknown', { coins: '495' }, { scope: 'r' }),
      resolve('p1', 'z', { coins: '512' }, 'unknown', { coins: '495' }, { scope: 'r' }),
      resolve('p1', 'y', { coins: '1024' }, 'applied', { coins: '1519' }, { order: '11', scope: 'r' }),
      { op: 'journal', query: { owner: 'p1' }, expect: { signatures: ['w', 'y'] } },
      // Balances and scope totals never depend on retention.
      { op: 'balances', owner: 'p1', expect: { coins: '1519' } },
      { op: 'totals', scope: 'r', expect: { coins: '1519' } },
    ],
  },
  {
    name: 'retention-none',
    rule: 'with no journal kept, resolve proves new only an entry of an owner that booked nothing; otherwise unknown unless the window holds it',
    capacity: 1,
    retention: 0,
    steps: [
      resolve('p1', 'a', { coins: '1' }, 'applied', { coins: '1' }),
      resolve('p1', 'a', { coins: '1' }, 'duplicate', { coins: '1' }),
      apply('p1', 'b', { coins: '2' }, 'applied', { coins: '3' }, { order: '1' }),
      resolve('p1', 'a', { coins: '1' }, 'unknown', { coins: '3' }),
      // Above every order booked, yet unknown: with nothing kept, nothing is proven.
      resolve('p1', 'c', { coins: '4' }, 'unknown', { coins: '3' }, { order: '5' }),
      { op: 'journal', query: { owner: 'p1' }, expect: { signatures: [] } },
      { op: 'balances', owner: 'p1', expect: { coins: '3' } },
    ],
  },
]);

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
