// The conformance kit over every operation of the Store contract: the ledger cases (cases.ts,
// run by ledger-run.ts) and the limiter, ordering and idempotency cases, grouped in suites, with
// the kit's one runner (run, runCase). Runner-agnostic: every check returns its differences
// instead of throwing.

import { InvalidArgumentError, isOnceflowError } from '../core/errors.js';
import { isPlainObject, knownKeys } from '../core/validate.js';
import { limiterNamespace } from '../limiter/keys.js';
import type { LimitCall, LimiterTakeReply } from '../store/limiter.js';
import type { Store } from '../store/store.js';
import type { LimitSpec } from '../windows/limits/types.js';
import { type ConformanceCase, cases, retentionCases } from './cases.js';
import { differ } from './differ.js';
import { type IdempotencyCase, idempotencyCases } from './idempotency-cases.js';
import { runIdempotency } from './idempotency-run.js';
import { runLedgerCase } from './ledger-run.js';
import {
  type BadNumber,
  type ExpectedVerdict,
  type LimiterCase,
  type LimiterCaseLimit,
  type LimiterStep,
  limiterCases,
} from './limiter-cases.js';
import { type OrderingCase, type OrderingStep, orderingCases } from './ordering-cases.js';

/** The suites of the kit, one per group of store operations. */
export type SuiteName =
  | 'ledger'
  | 'ledger-retention'
  | 'limiter'
  | 'limiter-state'
  | 'limiter-outage'
  | 'version-gate'
  | 'checkpoint'
  | 'snowflake-clock'
  | 'idempotency';

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

/** Makes the store unreachable (`begin`) and reachable again (`end`), for the `limiter-outage` suite. */
export interface OutageHook {
  begin(): void | Promise<void>;
  end(): void | Promise<void>;
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
      : c.suite === 'idempotency'
        ? await runIdempotency(store, c, `${prefix}${c.name}`)
        : await runOrdering(store, c, `${prefix}${c.name}`);
  return { suite: suiteName, name: c.name, rule: c.rule, failures };
}

// The base instant of the limiter cases: aligned to the hour (a multiple of every window they
// use), in this century (a store may check times are plausible), well below 2^52.
const BASE = 1_699_999_200_000;

async function runLimiter(
  store: Store,
  c: LimiterCase,
  name: string,
  outage: OutageHook | undefined,
): Promise<string[]> {
  const take = store.limiterTake?.bind(store) as NonNullable<Store['limiterTake']>;
  const specs = c.limits.map(toLimitSpec);
  const namespace = (space?: string) => limiterNamespace(space === undefined ? name : `${name}/${space}`);
  // Every limit counts by the one subject. Fresh call objects per take: a store that keeps what
  // it derives from a call object must find the same state again from a new one.
  const callsOf = (subject: string, given: readonly LimitSpec[] = specs): LimitCall[] =>
    given.map((spec) => ({ spec, subject }));
  const failures: string[] = [];
  let lastStoreNow = Number.NEGATIVE_INFINITY;
  let down = false;
  for (const [i, step] of c.steps.entries()) {
    const where = `step ${i} (${step.op}${'at' in step && step.at !== undefined ? ` at ${step.at}` : ''})`;
    try {
      const problem = await limiterStep(step);
      if (problem) failures.push(`${where}: ${problem}`);
    } catch (err) {
      failures.push(`${where}: threw ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (down) await outage?.end();
  return failures;

  async function limiterStep(step: LimiterStep): Promise<string | undefined> {
    switch (step.op) {
      case 'take': {
        const cost = step.cost ?? 1;
        const now = step.at === 'store' ? undefined : BASE + step.at;
        const reply = await take({
          namespace: namespace(step.space),
          limits: callsOf(step.subject ?? 'k'),
          cost,
          now,
        });
        const at = step.at === 'store' ? reply?.now : BASE;
        if (step.at === 'store') {
          if (!Number.isSafeInteger(reply?.now) || reply.now < lastStoreNow) {
            return `reply now: expected the store's time in whole ms, never going back (last ${lastStoreNow}), got ${reply?.now}`;
          }
          lastStoreNow = reply.now;
        }
        return checkReply(reply, now, step.expect, at);
      }
      case 'take-invalid': {
        const spec = specs[0] as LimitSpec;
        const bad = step.spec;
        const broken =
          bad === undefined ? spec : Object.freeze({ ...spec, [bad.field]: badValue(bad.value) });
        const command = {
          namespace: namespace(),
          limits: callsOf('k', [broken, ...specs.slice(1)]),
          cost: step.cost === undefined ? 1 : badValue(step.cost),
          now: step.now === undefined ? BASE + (step.at ?? 0) : badValue(step.now),
        } as Parameters<typeof take>[0];
        let pending: Promise<LimiterTakeReply>;
        try {
          pending = Promise.resolve(take(command));
        } catch (err) {
          return `threw synchronously (a store rejects, never throws): ${String(err)}`;
        }
        return pending.then(
          (reply) => `expected a rejection with ${step.code}, got an answer ${JSON.stringify(reply)}`,
          (err: unknown) =>
            hasCode(err, step.code) ? undefined : `expected ${step.code}, got ${describe(err)}`,
        );
      }
      case 'outage-begin':
        await outage?.begin();
        down = true;
        return undefined;
      case 'outage-end':
        await outage?.end();
        down = false;
        return undefined;
      case 'take-fails': {
        const command = {
          namespace: namespace(),
          limits: callsOf('k'),
          cost: step.cost ?? 1,
          now: BASE + step.at,
        };
        let pending: Promise<LimiterTakeReply>;
        try {
          pending = Promise.resolve(take(command));
        } catch (err) {
          return `threw synchronously (a store rejects, never throws): ${String(err)}`;
        }
        return pending.then(
          (reply) =>
            `expected a rejection with ${step.code} while unreachable, got an answer ${JSON.stringify(reply)}`,
          (err: unknown) =>
            hasCode(err, step.code) ? undefined : `expected ${step.code}, got ${describe(err)}`,
        );
      }
      case 'delete': {
        const deleted = await store.limiterDelete?.({
          namespace: namespace(),
          limits: callsOf(step.subject),
        });
        return differ('keys deleted', deleted, step.expect);
      }
      case 'reset':
        return differ('keys reset', await store.limiterReset?.(namespace(step.space)), step.expect);
    }
  }

  function checkReply(
    reply: LimiterTakeReply,
    now: number | undefined,
    expect: { allowed: boolean; verdicts?: ExpectedVerdict[] },
    base: number,
  ): string | undefined {
    if (!isPlainObject(reply) || !Array.isArray(reply.verdicts))
      return `expected a reply, got ${describe(reply)}`;
    if (now !== undefined && reply.now !== now)
      return `reply now: expected ${now} (the command's), got ${reply.now}`;
    if (reply.verdicts.length !== specs.length) {
      return `expected one verdict per limit (${specs.length}), got ${reply.verdicts.length}`;
    }
    const allAllowed = reply.verdicts.every((x) => x?.allowed === true);
    if (reply.allowed !== allAllowed) {
      return `reply allowed ${reply.allowed}, but its verdicts say ${allAllowed} (allowed iff every limit allows)`;
    }
    const problem = differ('allowed', reply.allowed, expect.allowed);
    if (problem || expect.verdicts === undefined) return problem;
    const got = reply.verdicts.map((x, j) => shown(x, expect.verdicts?.[j] ?? {}, base));
    return differ('verdicts', got, expect.verdicts);
  }
}

/** The fields of `verdict` that `expected` names, in the case's terms (times relative to `base`). */
function shown(verdict: LimiterTakeReply['verdicts'][number], expected: ExpectedVerdict, base: number) {
  const out: Record<string, unknown> = {};
  if ('allowed' in expected) out.allowed = verdict.allowed;
  if ('remaining' in expected) out.remaining = verdict.remaining;
  if ('resetAt' in expected) out.resetAt = verdict.resetAt - base;
  if ('retryAfterMs' in expected) {
    out.retryAfterMs = verdict.retryAfterMs === Number.POSITIVE_INFINITY ? 'never' : verdict.retryAfterMs;
  }
  return out;
}

function toLimitSpec(l: LimiterCaseLimit): LimitSpec {
  const param =
    l.algorithm === 'sliding-window'
      ? (l.granularityMs ?? l.windowMs)
      : l.algorithm === 'gcra'
        ? (l.burst ?? l.limit)
        : 0;
  return Object.freeze({ id: l.id, algorithm: l.algorithm, limit: l.limit, windowMs: l.windowMs, param });
}

function badValue(value: BadNumber | string): unknown {
  if (value === 'NaN') return Number.NaN;
  if (value === 'Infinity') return Number.POSITIVE_INFINITY;
  if (value === '-Infinity') return Number.NEGATIVE_INFINITY;
  return value;
}

async function runOrdering(store: Store, c: OrderingCase, prefix: string): Promise<string[]> {
  const ops = store as Required<Pick<Store, Suite['ops'][number]>> & Store;
  const nameOf = (name: string | undefined) => `${prefix}/${name ?? 'n'}`;
  const failures: string[] = [];
  for (const [i, step] of c.steps.entries()) {
    const where = `step ${i} (${step.op})`;
    try {
      const problem = await orderingStep(step);
      if (problem) failures.push(`${where}: ${problem}`);
    } catch (err) {
      failures.push(`${where}: threw ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return failures;

  async function orderingStep(step: OrderingStep): Promise<string | undefined> {
    switch (step.op) {
      case 'version-upsert': {
        const got = await ops.versionUpsert(nameOf(step.name), step.key, step.version, step.value);
        return differ('upsert', { outcome: got?.outcome, version: got?.version }, step.expect);
      }
      case 'version-get':
        return differ('stored', (await ops.versionGet(nameOf(step.name), step.key)) ?? null, step.expect);
      case 'version-race': {
        const gate = nameOf(step.name);
        const got = await Promise.all(
          step.values.map((value) => ops.versionUpsert(gate, step.key, step.version, value)),
        );
        const winners = step.values.filter((_, j) => got[j]?.outcome === 'applied');
        if (winners.length !== 1)
          return `racing upserts: expected exactly one applied, got ${winners.length}`;
        const others = got.filter((r) => r.outcome !== 'applied');
        const wrong = others.find((r) => r.outcome !== 'duplicate' || r.version !== step.version);
        if (wrong)
          return `racing upserts: the others must be duplicates of ${step.version}, got ${JSON.stringify(wrong)}`;
        return differ('stored after the race', await ops.versionGet(gate, step.key), {
          version: step.version,
          value: winners[0],
        });
      }
      case 'checkpoint-save':
        return differ(
          'save',
          await ops.checkpointSave(nameOf(step.name), step.revision, step.data),
          step.expect,
        );
      case 'checkpoint-load':
        return differ('loaded', (await ops.checkpointLoad(nameOf(step.name))) ?? null, step.expect);
      case 'checkpoint-race': {
        const name = nameOf(step.name);
        const got = await Promise.all(
          step.datas.map((data) => ops.checkpointSave(name, step.revision, data)),
        );
        const winners = step.datas.filter((_, j) => got[j] === 'saved');
        if (winners.length !== 1) return `racing saves: expected exactly one saved, got ${winners.length}`;
        return differ('loaded after the race', await ops.checkpointLoad(name), {
          revision: step.revision,
          data: winners[0],
        });
      }
      case 'timestamp-advance':
        return differ('timestamp', await ops.timestampAdvance(nameOf(step.name), step.ms), step.expect);
      case 'lease-renew': {
        const got = await ops.leaseRenew(nameOf(step.name), step.run, step.ms, step.takeover);
        return differ('lease', { held: got?.held, ms: got?.ms }, step.expect);
      }
      case 'lease-race': {
        const name = nameOf(step.name);
        const got = await Promise.all(
          step.runs.map((run) => ops.leaseRenew(name, run, step.ms, step.takeover)),
        );
        const held = got.filter((r) => r.held);
        if (held.length !== 1)
          return `racing takeovers: expected exactly one to hold the name, got ${held.length}`;
        const wrong = got.find((r) => !r.held && r.ms !== held[0]?.ms);
        if (wrong)
          return `racing takeovers: a refused run must be told the winner's lease, got ${JSON.stringify(wrong)}`;
        return undefined;
      }
    }
  }
}

function hasCode(err: unknown, code: string): boolean {
  return isOnceflowError(err) && err.code === code;
}

function describe(err: unknown): string {
  if (isOnceflowError(err)) return `${err.code} (${err.message})`;
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
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
  'version-gate',
  'checkpoint',
  'snowflake-clock',
  'idempotency',
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
