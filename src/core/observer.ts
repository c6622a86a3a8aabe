// The one event table of onceflow's parts (DESIGN §3.9): every part reports through an `observer`
// option typed by this union, so a metrics adapter (onceflow/metrics) or a logger reads one shape.
// Core is layer 0: the outcome unions are spelled here, and each part checks at compile time that
// its own union matches (see the `satisfies` checks beside each emit).
import { InvalidOptionError, isOnceflowError, type StoreOutcome } from './errors.js';

/**
 * What a failed store call left behind (see `StoreError.outcome`): `not-applied` (no effect) or
 * `unknown` (it may have taken effect).
 */
export type ObservedStoreOutcome = StoreOutcome;

/**
 * A ledger apply: `applied`, `duplicate` or `stale` as the ledger answered, or `failed` when the
 * store failed (`storeOutcome` says whether it may have been applied). `ledger` is the configured
 * name (a bounded label); `owner` is for debugging only and must never become a metric label.
 */
export type LedgerApplyEvent =
  | {
      readonly part: 'ledger';
      readonly type: 'apply';
      readonly ledger: string;
      readonly outcome: 'applied' | 'duplicate' | 'stale';
      /** Unbounded: never a metric label. */
      readonly owner: string;
    }
  | {
      readonly part: 'ledger';
      readonly type: 'apply';
      readonly ledger: string;
      readonly outcome: 'failed';
      readonly storeOutcome: ObservedStoreOutcome;
      /** Unbounded: never a metric label. */
      readonly owner: string;
    };

/**
 * A ledger resolve: `applied`, `duplicate`, `unknown` (neither provable: page someone when it is
 * above zero), or `failed` when the store failed.
 */
export type LedgerResolveEvent =
  | {
      readonly part: 'ledger';
      readonly type: 'resolve';
      readonly ledger: string;
      readonly outcome: 'applied' | 'duplicate' | 'unknown';
      /** Unbounded: never a metric label. */
      readonly owner: string;
    }
  | {
      readonly part: 'ledger';
      readonly type: 'resolve';
      readonly ledger: string;
      readonly outcome: 'failed';
      readonly storeOutcome: ObservedStoreOutcome;
      /** Unbounded: never a metric label. */
      readonly owner: string;
    };

/**
 * One read-only "seen before?" check of a buffer layer, in front of the authoritative atomic step
 * (docs/pre-checks.md): `skipped` (the Bloom pre-check proved it never seen here: no store read),
 * `read-seen` (the store holds it: a duplicate), `read-unseen` (the store does not: a false
 * positive of the pre-check, or no pre-check configured).
 */
export type PreCheckOutcome = 'skipped' | 'read-seen' | 'read-unseen';

/** A ledger's `seen` check (`ledger.seen`): see {@link PreCheckOutcome}. */
export interface LedgerPreCheckEvent {
  readonly part: 'ledger';
  readonly type: 'pre-check';
  readonly ledger: string;
  readonly outcome: PreCheckOutcome;
}

/**
 * One idempotent run's answer: `executed` (the function ran and its result was recorded; `takeover`
 * when it took over a lease that ran out), `replayed`, `in-progress`, `mismatch`, or `failed` (the
 * function or the store failed; `error` is a code or class name). `scope` is the configured name.
 */
export interface IdempotencyRunEvent {
  readonly part: 'idempotency';
  readonly type: 'run';
  readonly scope: string;
  readonly outcome: 'executed' | 'replayed' | 'in-progress' | 'mismatch' | 'failed';
  /** True when this run took over another holder's expired lease. */
  readonly takeover: boolean;
  /** On `failed`: the error's code (`ERR_...`) or class name; bounded. */
  readonly error?: string;
  /** Unbounded: never a metric label. */
  readonly key: string;
}

/** An idempotency's `seen` check (`idempotency.seen`): see {@link PreCheckOutcome}. */
export interface IdempotencyPreCheckEvent {
  readonly part: 'idempotency';
  readonly type: 'pre-check';
  readonly scope: string;
  readonly outcome: PreCheckOutcome;
}

/** A run lost its lease while its function ran (another caller may run it too): page on it. */
export interface IdempotencyLeaseLostEvent {
  readonly part: 'idempotency';
  readonly type: 'lease-lost';
  readonly scope: string;
  /** Unbounded: never a metric label. */
  readonly key: string;
}

/**
 * The reasons of a limiter decision (the limiter's `DecisionReason`): `allowed`, `limited`,
 * `blocked` (answered by the block cache, no store call), `cost-exceeds-limit`, and the degraded
 * answers `degraded-deny`, `degraded-allow`, `degraded-local`.
 */
export type ObservedDecisionReason =
  | 'allowed'
  | 'limited'
  | 'blocked'
  | 'cost-exceeds-limit'
  | 'degraded-deny'
  | 'degraded-allow'
  | 'degraded-local';

/** One limiter decision. `limiter` is the configured name. */
export interface LimiterDecisionEvent {
  readonly part: 'limiter';
  readonly type: 'decision';
  readonly limiter: string;
  readonly allowed: boolean;
  readonly reason: ObservedDecisionReason;
}

/**
 * A sampled key of a `sliding-window` limit, after a take it admitted: the store's bucketed
 * `estimate` of the cost admitted in the window (the limit minus the decision's `remaining`)
 * against the `exact` cost this limiter admitted for that key in the last window, from a log of its
 * own admissions. Exact only where this process is the key's only taker (the embedded store, or
 * keys pinned to one process); see docs/metrics.md *Consistency deviation*. A local-first limiter
 * reports the same event at each share it leases: this node's view of the usage (`estimate`, as
 * of its last lease) against the store's just before this lease (`exact`).
 */
export interface LimiterDeviationEvent {
  readonly part: 'limiter';
  readonly type: 'deviation';
  readonly limiter: string;
  /** The limit's `id` (a configured name). */
  readonly limit: string;
  /** The limit's `limit`: the deviation as a share of it is what to compare. */
  readonly max: number;
  readonly estimate: number;
  readonly exact: number;
}

/**
 * A local-first limiter's share of a hot key's budget (docs/limits.md *Local-first limits*):
 * `granted` (`points` leased from the store in one take), `refused` (the store had less than a
 * share left: the key's takes go to the store one by one for a while), `returned` (`points`, an
 * unused rest, given back while it still counted), `expired` (`points` left unused past the
 * window the share was charged to: not given back, they count until they leave the window),
 * `failed` (the lease or return call failed; the take went to the store on its own).
 */
export interface LimiterLeaseEvent {
  readonly part: 'limiter';
  readonly type: 'lease';
  readonly limiter: string;
  readonly outcome: 'granted' | 'refused' | 'returned' | 'expired' | 'failed';
  readonly points: number;
}

/**
 * The store failed or timed out for a take, and the degraded policy answered (`policy`: `deny`,
 * `allow`, `local`, or `throw` when the take rejects). `error`: the failure's code or class name.
 */
export interface LimiterDegradedEvent {
  readonly part: 'limiter';
  readonly type: 'degraded';
  readonly limiter: string;
  readonly policy: 'deny' | 'allow' | 'local' | 'throw';
  readonly error: string;
}

/**
 * One push into a reorder buffer, with its outcome (the buffer's `PushOutcome`), how many items it
 * released, and the buffer's fill after it (`buffered` held, `missing` numbers remembered).
 */
export interface ReorderPushEvent {
  readonly part: 'reorder';
  readonly type: 'push';
  readonly outcome: 'released' | 'buffered' | 'late' | 'duplicate' | 'stale' | 'rejected';
  readonly released: number;
  readonly buffered: number;
  readonly missing: number;
}

/**
 * A forced advance: the buffer gave up on `[from, to]` (a hole timed out, or an overflow with
 * `overflow: 'advance'` pushed past it). Those numbers are now missing; a sustained rate pages.
 */
export interface ReorderGapEvent {
  readonly part: 'reorder';
  readonly type: 'gap';
  readonly from: number;
  readonly to: number;
  readonly cause: 'timeout' | 'overflow';
}

/** The adaptive gap timeout moved to `timeoutMs`. */
export interface AdaptiveTimeoutEvent {
  readonly part: 'adaptive-timeout';
  readonly type: 'timeout';
  readonly timeoutMs: number;
}

/**
 * The compensator's work: `gap` (a range queued for re-request), `retry` (an attempt failed and
 * will be retried), `filled` (requested, or filled by late arrivals), `give-up` (still unfilled
 * after the last retry: page on it). `backlog` is the number of ranges still queued, waiting for a
 * retry or in flight, after the event.
 */
export type CompensatorEvent =
  | {
      readonly part: 'compensator';
      readonly type: 'gap' | 'filled';
      readonly from: number;
      readonly to: number;
      readonly backlog: number;
    }
  | {
      readonly part: 'compensator';
      readonly type: 'retry';
      readonly from: number;
      readonly to: number;
      readonly attempt: number;
      readonly backlog: number;
    }
  | {
      readonly part: 'compensator';
      readonly type: 'give-up';
      readonly from: number;
      readonly to: number;
      readonly backlog: number;
      /** The last attempt's error, as `onGiveUp` receives it (not a label). */
      readonly error: unknown;
    };

/** A version gate upsert: `applied`, `duplicate`, `stale`, or `failed` (store error). */
export interface VersionGateEvent {
  readonly part: 'version-gate';
  readonly type: 'upsert';
  readonly gate: string;
  readonly outcome: 'applied' | 'duplicate' | 'stale' | 'failed';
}

/**
 * A snowflake generator waited `ms` for its clock: `rollback` (the clock stepped back within the
 * tolerance) or `sequence` (the millisecond's sequence was spent). `rollback-refused`: the clock
 * stepped back further than the tolerance and `next()` threw.
 */
export interface SnowflakeEvent {
  readonly part: 'snowflake';
  readonly type: 'wait' | 'rollback-refused';
  readonly cause: 'rollback' | 'sequence';
  readonly ms: number;
}

/**
 * A lookup guard's answer to one get (`createLookupGuard`): `backend` (the lookup ran), `joined`
 * (a concurrent get of the key was running: one lookup for both), `absent-filter` (degraded: the
 * filter of known keys has never seen it), `absent-null-cache` (degraded: a recent null reused).
 */
export interface GuardGetEvent {
  readonly part: 'guard';
  readonly type: 'get';
  readonly guard: string;
  readonly outcome: 'backend' | 'joined' | 'absent-filter' | 'absent-null-cache';
}

/** A lookup guard changed state, with the window's figures that decided it. */
export interface GuardStateEvent {
  readonly part: 'guard';
  readonly type: 'state';
  readonly guard: string;
  readonly state: 'normal' | 'degraded';
  readonly nullRatio: number;
  readonly slowRatio: number;
}

/**
 * One store call (from {@link observeStore}): the store's `kind`, the contract operation, how long
 * it took (monotonic ms) and, when it failed, the error's code or class name.
 */
export interface StoreCallEvent {
  readonly part: 'store';
  readonly type: 'call';
  readonly store: string;
  readonly operation: string;
  readonly durationMs: number;
  readonly error?: string;
}

/** Every event a core part reports, a union on `part` and `type` (see docs/observability.md). */
export type OnceflowEvent =
  | LedgerApplyEvent
  | LedgerResolveEvent
  | LedgerPreCheckEvent
  | IdempotencyRunEvent
  | IdempotencyLeaseLostEvent
  | IdempotencyPreCheckEvent
  | LimiterDecisionEvent
  | LimiterDegradedEvent
  | LimiterDeviationEvent
  | LimiterLeaseEvent
  | ReorderPushEvent
  | ReorderGapEvent
  | AdaptiveTimeoutEvent
  | CompensatorEvent
  | VersionGateEvent
  | SnowflakeEvent
  | GuardGetEvent
  | GuardStateEvent
  | StoreCallEvent;

/**
 * What every event of every part has: the part that reports it and what happened. The core parts'
 * events are {@link OnceflowEvent}; the adapters add theirs with parts of their own
 * (`stream-producer`, `stream-consumer`: onceflow/streams; `gateway`: onceflow/ws), and
 * onceflow/metrics's `ObservedEvent` is the union of them all.
 */
export interface EventShape {
  readonly part: string;
  readonly type: string;
}

/**
 * Receives a part's events, synchronously, on the operation's path: keep it cheap (count, set a
 * gauge, queue). A throw is caught, reported once per observer as a process warning
 * (`ONCEFLOW_OBSERVER_THREW`), and never breaks the operation. `E` is the events of the parts it
 * is given to: an observer of a wider union (every part's) fits every part's option.
 */
export type Observer<E extends EventShape = OnceflowEvent> = (event: E) => void;

/** A part's guarded emitter (internal: what {@link observing} returns). */
export type Emit<E extends EventShape = OnceflowEvent> = (event: E) => void;

// Observers already reported: a broken observer shared by many parts warns once per process.
const reported = new WeakSet<object>();

/**
 * Validates an `observer` option (a function or undefined; `path` names it in the error) and
 * returns the guarded emitter, or undefined when none is given: call sites write
 * `if (emit !== undefined) emit({...})`, so an unobserved part builds no event.
 */
export function observing<E extends EventShape = OnceflowEvent>(
  observer: unknown,
  path: string,
): Emit<E> | undefined {
  if (observer === undefined) return undefined;
  if (typeof observer !== 'function')
    throw new InvalidOptionError(path, 'a function (event) => void', observer);
  const fn = observer as Observer<E>;
  return (event) => {
    try {
      fn(event);
    } catch (err) {
      reportThrow(fn, event, err);
    }
  };
}

function reportThrow(fn: object, event: EventShape, err: unknown): void {
  if (reported.has(fn)) return;
  reported.add(fn);
  warn(
    `an onceflow observer threw on ${event.part}.${event.type} (reported once; its later throws are ignored): ${errorName(err)}: ${messageOf(err)}`,
    'ONCEFLOW_OBSERVER_THREW',
  );
}

/** A thrown value's message, or the value itself as text. */
export function messageOf(err: unknown): string {
  return String((err as { message?: unknown } | undefined)?.message ?? err);
}

/**
 * Reports a problem no caller can be told of (a callback that threw, a result not recorded): a
 * process warning (`OnceflowWarning`, `code`) where there is a `process`, else `console.error`.
 * Never throws: reporting must not break the operation.
 */
export function warn(text: string, code: string): void {
  const proc = (globalThis as { process?: { emitWarning?: (m: string, o: object) => void } }).process;
  try {
    if (typeof proc?.emitWarning === 'function') proc.emitWarning(text, { type: 'OnceflowWarning', code });
    else console.error(text);
  } catch {
    // Nowhere left to report to.
  }
}

// An error code or class name of at most this length: a bounded label however odd the error.
const MAX_ERROR_NAME = 64;

/**
 * A failure as a bounded label: its string `code` (`ERR_STORE`, `ECONNRESET`), else its class name,
 * else its type.
 */
export function errorName(err: unknown): string {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  let name: string;
  if (typeof code === 'string' && code.length > 0) name = code;
  else if (err instanceof Error) name = err.name;
  else name = err === null ? 'null' : typeof err;
  return name.length > MAX_ERROR_NAME ? name.slice(0, MAX_ERROR_NAME) : name;
}

/** What a failure may have left behind: a `StoreError`'s own outcome, else `unknown`. */
export function storeOutcomeOf(err: unknown): StoreOutcome {
  return isOnceflowError(err, 'ERR_STORE') ? err.outcome : 'unknown';
}
