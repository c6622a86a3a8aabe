// The conformance kit over every operation of the Store contract: the ledger cases (cases.ts,
// run by ledger-run.ts) and the limiter, ordering and idempotency cases (run by limiter-run.ts,
// ordering-run.ts, idempotency-run.ts), grouped in suites, with the kit's one runner (run, runCase). Runner-agnostic: every check returns its differences
// instead of throwing.

import { InvalidArgumentError } from '../core/errors.js';
import { isPlainObject, knownKeys } from '../core/validate.js';
import type { Store } from '../store/store.js';
import { type ConformanceCase, cases, retentionCases } from './cases.js';
import { type IdempotencyCase, idempotencyCases, idempotencyGetCases } from './idempotency-cases.js';
import { runIdempotency } from './idempotency-run.js';
import { runLedgerCase } from './ledger-run.js';
import { limiterAdjustCases } from './limiter-adjust-cases.js';
import { type LimiterCase, limiterCases } from './limiter-cases.js';
import { type OutageHook, runLimiter } from './limiter-run.js';
import { type OrderingCase, orderingCases } from './ordering-cases.js';
import { runOrdering } from './ordering-run.js';

export type { OutageHook } from './limiter-run.js';

/** The suites of the kit, one per group of store operations. */
export type SuiteName =
  | 'ledger'
  | 'ledger-retention'
  | 'limiter'
  | 'limiter-state'
  | 'limiter-outage'
  | 'limiter-adjust'
  | 'version-gate'
  | 'checkpoint'
  | 'snowflake-clock'
  | 'idempotency'
  | 'idempotency-get';

/** Any case of the kit: a ledger case (no `suite`), a limiter, an ordering or an idempotency case. */
export type AnyCase = ConformanceCase | LimiterCase | OrderingCase | IdempotencyCase;

/** One suite: the store operations its cases call, and the cases. */
export interface Suite {
  readonly name: SuiteName;
  readonly description: string;
  /** Store members every case of the suite calls; a store without one does not support the suite. */
  readonly ops: readonly (keyof Store)[];
  /** What the caller must give in the options to run the suite (`outage`, `retention`), if anything. */
  readonly needs?: 'outage' | 'retention';
  readonly cases: readonly AnyCase[];
}

/** The result of one case of one suite on one store. */
export interface CaseResult {
  readonly suite: SuiteName;
  readonly name: string;
  readonly rule: string;
  /** Empty when the store passed; otherwise one line per step that differed. */
  readonly failures: string[];
  /**
   * Set when the case did not run: the store operations it lacks (or the option the caller did
   * not give), with `failures` empty, or one failure per missing operation when the suite was
   * required.
   */
  readonly unsupported?: readonly string[];
}

/** Options of the kit's {@link run} and {@link runCase}. */
export interface RunOptions {
  /**
   * Prefix of the names the cases use (ledgers, limiter namespaces, gates, ...), so runs never
   * see each other's state on a shared server. Default: a random one.
   */
  prefix?: string;
  /** The suites to run, by name. Default: every suite. */
  suites?: readonly SuiteName[];
  /**
   * Suites the store must support: one it lacks an operation of fails instead of being
   * reported as unsupported. `true`: every suite run.
   */
  require?: readonly SuiteName[] | true;
  /**
   * For the `limiter-outage` suite: a way to cut the store off its server and back (a TCP proxy's
   * `cut()` / `restore()`). Without it that suite is reported as unsupported.
   */
  outage?: OutageHook;
  /**
   * For the `ledger-retention` suite: makes a store of the kind under test (on the same server)
   * that keeps only the newest `maxEntriesPerOwner` journal entries of each owner (0: none; the
   * cases book for one owner each, so a retention per ledger does as well). Called once per case;
   * what it returns is closed (`close()`, when it has one) after the case. Without it that suite
   * is reported as unsupported.
   *
   * @example
   * ```ts
   * // Redis: { retention: (n) => createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: n } }) }
   * const results = await conformance.run(memoryStore(), {
   *   suites: ['ledger-retention'],
   *   retention: (n) => memoryStore({ journal: { maxEntries: n } }),
   *   require: true,
   * });
   * results.flatMap((r) => r.failures); // []
   * ```
   */
  retention?: (maxEntriesPerOwner: number) => Store | Promise<Store>;
}

const byName = <N extends SuiteName>(name: N, list: readonly { suite: string }[]) =>
  list.filter((c) => c.suite === name) as AnyCase[];

/** Every suite of the kit, in the order {@link run} runs them. */
export const suites: readonly Suite[] = Object.freeze(
  [
    {
      name: 'ledger',
      description: 'window, horizon, balances, journal, scope totals (DESIGN §3.2-3.3)',
      ops: ['ledgerApply', 'ledgerBalances', 'ledgerWindow', 'ledgerJournal', 'ledgerScopeTotals'],
      cases,
    },
    {
      name: 'ledger-retention',
      description:
        'resolve once journal retention dropped entries: unknown where nothing proves an entry new, never booked twice',
      ops: [
        'ledgerApply',
        'ledgerResolve',
        'ledgerBalances',
        'ledgerWindow',
        'ledgerJournal',
        'ledgerScopeTotals',
      ],
      needs: 'retention',
      cases: retentionCases,
    },
    {
      name: 'limiter',
      description:
        'each algorithm at window edges, exact waits, costs, multi-limit all-or-nothing, malformed takes',
      ops: ['limiterTake'],
      cases: byName('limiter', limiterCases),
    },
    {
      name: 'limiter-state',
      description: 'limiterDelete and limiterReset',
      ops: ['limiterTake', 'limiterDelete', 'limiterReset'],
      cases: byName('limiter-state', limiterCases),
    },
    {
      name: 'limiter-outage',
      description: 'an unreachable store rejects with a StoreError and charges nothing afterwards',
      ops: ['limiterTake'],
      needs: 'outage',
      cases: byName('limiter-outage', limiterCases),
    },
    {
      name: 'limiter-adjust',
      description:
        'limiterAdjust (get, delete, set, reward, penalty, block) on every algorithm, and blocks a refusal leaves in takes',
      ops: ['limiterTake', 'limiterAdjust'],
      cases: limiterAdjustCases as AnyCase[],
    },
    {
      name: 'version-gate',
      description: 'newer version wins, equal and older refused, atomically',
      ops: ['versionUpsert', 'versionGet'],
      cases: byName('version-gate', orderingCases),
    },
    {
      name: 'checkpoint',
      description: 'reorder checkpoints: the revision only rises',
      ops: ['checkpointSave', 'checkpointLoad'],
      cases: byName('checkpoint', orderingCases),
    },
    {
      name: 'snowflake-clock',
      description: 'persisted timestamps and leases: one live run per name, compare-and-set takeover',
      ops: ['timestampAdvance', 'leaseRenew'],
      cases: byName('snowflake-clock', orderingCases),
    },
    {
      name: 'idempotency',
      description:
        'idempotency records: one holder per key, replay until the ttl, mismatch, fencing by token, leases on the store clock',
      ops: ['idempotencyBegin', 'idempotencyRenew', 'idempotencyComplete', 'idempotencyRelease'],
      cases: byName('idempotency', idempotencyCases),
    },
    {
      name: 'idempotency-get',
      description:
        "idempotencyGet, the read-only state of a record (a pre-check's read): as the record's transitions left it, on the store clock, changing nothing",
      ops: [
        'idempotencyBegin',
        'idempotencyRenew',
        'idempotencyComplete',
        'idempotencyRelease',
        'idempotencyGet',
      ],
      cases: byName('idempotency-get', idempotencyGetCases),
    },
  ].map((s) => Object.freeze(s) as Suite),
);

/**
 * Runs the selected suites (default: all) on `store`; resolves to one result per case. A suite
 * whose operations the store lacks is reported as unsupported (no failures) unless required.
 *
 * @example
 * ```ts
 * import { conformance } from 'onceflow/testing';
 * const results = await conformance.run(memoryStore());
 * results.filter((r) => r.failures.length > 0).length; // 0
 * // Only the limiter suites, and the store must have them:
 * const limiter = await conformance.run(memoryStore(), { suites: ['limiter', 'limiter-state'], require: true });
 * limiter.every((r) => r.failures.length === 0 && r.unsupported === undefined); // true
 * ```
 */
export async function run(store: Store, options: RunOptions = {}): Promise<CaseResult[]> {
  checkOptions(store, options);
  const prefix = options.prefix ?? randomPrefix();
  const chosen = options.suites ?? suites.map((s) => s.name);
  const results: CaseResult[] = [];
  for (const suite of suites) {
    if (!chosen.includes(suite.name)) continue;
    for (const c of suite.cases) results.push(await runCase(store, c, { ...options, prefix }));
  }
  return results;
}

/**
 * Runs one case of any suite on `store`, on names of its own under `prefix`.
 *
 * @example
 * ```ts
 * import { conformance } from 'onceflow/testing';
 * const store = memoryStore();
 * for (const suite of conformance.suites) {
 *   for (const c of suite.cases) {
 *     const { failures } = await conformance.runCase(store, c);
 *     failures; // []
 *   }
 * }
 * ```
 */
export async function runCase(store: Store, c: AnyCase, options: RunOptions = {}): Promise<CaseResult> {
  checkOptions(store, options);
  if (typeof (c as Partial<AnyCase> | undefined)?.name !== 'string' || !Array.isArray(c.steps)) {
    throw new InvalidArgumentError('case', 'a case of conformance.suites', c);
  }
  const prefix = options.prefix ?? randomPrefix();
  const suiteName: SuiteName =
    'suite' in c ? c.suite : c.retention !== undefined ? 'ledger-retention' : 'ledger';
  const suite = suites.find((s) => s.name === suiteName);
  if (suite === undefined) throw new InvalidArgumentError('case.suite', 'the name of a suite', suiteName);
  const missing: string[] = suite.ops.filter((op) => typeof store[op] !== 'function');
  if (suite.needs === 'outage' && options.outage === undefined) missing.push('options.outage');
  if (suite.needs === 'retention' && options.retention === undefined) missing.push('options.retention');
  if (missing.length > 0) {
    const required = options.require === true || (options.require?.includes(suiteName) ?? false);
    return {
      suite: suiteName,
      name: c.name,
      rule: c.rule,
      unsupported: missing,
      failures: required
        ? missing.map((m) =>
            m.startsWith('options.')
              ? `required, but ${m} was not given`
              : `required, but the store has no ${m}`,
          )
        : [],
    };
  }
  if (!('suite' in c)) {
    const { name, rule } = c;
    if (c.retention === undefined)
      return { suite: 'ledger', name, rule, failures: await runLedgerCase(store, c, prefix) };
    const retained = await (options.retention as NonNullable<RunOptions['retention']>)(c.retention);
    if (typeof (retained as Partial<Store> | undefined)?.ledgerApply !== 'function') {
      throw new InvalidArgumentError('store', 'the store under test (with ledgerApply)', retained);
    }
    try {
      return { suite: suiteName, name, rule, failures: await runLedgerCase(retained, c, prefix) };
    } finally {
      await retained.close?.();
    }
  }
  const failures =
    'limits' in c
      ? await runLimiter(store, c, `${prefix}${c.name}`, options.outage)
      : isIdempotencyCase(c)
        ? await runIdempotency(store, c, `${prefix}${c.name}`)
        : await runOrdering(store, c, `${prefix}${c.name}`);
  return { suite: suiteName, name: c.name, rule: c.rule, failures };
}

function isIdempotencyCase(c: AnyCase): c is IdempotencyCase {
  return 'suite' in c && (c.suite === 'idempotency' || c.suite === 'idempotency-get');
}

function randomPrefix(): string {
  return `conf-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}:`;
}

const SUITE_NAMES = new Set<string>([
  'ledger',
  'ledger-retention',
  'limiter',
  'limiter-state',
  'limiter-outage',
  'limiter-adjust',
  'version-gate',
  'checkpoint',
  'snowflake-clock',
  'idempotency',
  'idempotency-get',
] satisfies SuiteName[]);

// The store under test must be given (a kit run against nothing would pass nothing), and the
// options must say what they mean: a misspelt suite would silently run none.
function checkOptions(store: Store, options: RunOptions): void {
  if (typeof (store as Partial<Store> | undefined)?.ledgerApply !== 'function') {
    throw new InvalidArgumentError('store', 'the store under test (with ledgerApply)', store);
  }
  if (!isPlainObject(options))
    throw new InvalidArgumentError('options', 'an object like { prefix, suites, require }', options);
  knownKeys('options', options, ['prefix', 'suites', 'require', 'outage', 'retention']);
  if (options.prefix !== undefined && typeof options.prefix !== 'string') {
    throw new InvalidArgumentError('options.prefix', 'a string', options.prefix);
  }
  for (const key of ['suites', 'require'] as const) {
    const list = options[key];
    if (list === undefined || (key === 'require' && list === true)) continue;
    if (!Array.isArray(list) || !list.every((n) => SUITE_NAMES.has(n))) {
      throw new InvalidArgumentError(
        `options.${key}`,
        `a list of suite names (${[...SUITE_NAMES].join(', ')})`,
        list,
      );
    }
  }
  const outage = options.outage as Partial<OutageHook> | undefined;
  if (outage !== undefined && (typeof outage?.begin !== 'function' || typeof outage.end !== 'function')) {
    throw new InvalidArgumentError('options.outage', 'an object with begin() and end()', outage);
  }
  if (options.retention !== undefined && typeof options.retention !== 'function') {
    throw new InvalidArgumentError(
      'options.retention',
      'a function making a store that keeps n journal entries per owner',
      options.retention,
    );
  }
}
