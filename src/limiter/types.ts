import type { Duration } from '../core/duration.js';
import type { Decision } from '../windows/limits/decision.js';
import type { LimitSpec } from '../windows/limits/types.js';

/** What a limiter does when its store fails or does not answer in time. Never a silent fail-open. */
export type DegradedPolicy =
  /** Rethrow the store's error (a `StoreError`). */
  | 'throw'
  /** Refuse (`reason: 'degraded-deny'`). */
  | 'deny'
  /** Admit without counting (`reason: 'degraded-allow'`): an explicit fail-open. */
  | 'allow'
  /**
   * Decide with a limiter in this process holding `share` of each limit (e.g. 1/4 on each of 4
   * nodes: the cluster as a whole stays near the limit). `reason: 'degraded-local'`.
   */
  | { mode: 'local'; share: number };

/** A take's subjects: one key, or one per `by` of the limits (`{ user: 'u1', ip: '10.0.0.1' }`). */
export type LimiterKey = string | Readonly<Record<string, string>>;

/** Options of one take. */
export interface TakeOptions {
  /** What the request costs (default 1): a non-negative safe integer. */
  cost?: number;
  /**
   * Pacing (rate-limiter-flexible's `execEvenly`, on demand): when refused with a wait of at most
   * what is left of `maxWait` (`'limited'`, or blocked), wait that long and take again, instead of
   * refusing; refused once the next wait would pass `maxWait` (at most ~24.8 days, a timer's
   * bound). Waiters are not queued: a request arriving meanwhile may take the slot a waiter was
   * promised, and the waiter then waits again within what is left of `maxWait`.
   */
  maxWait?: Duration;
}

/** One limit's part of a {@link LimiterState}. */
export interface LimitStateOf {
  readonly id: string;
  readonly limit: number;
  readonly windowMs: number;
  /** Usage counted against the limit now: rate-limiter-flexible's `consumedPoints` (may pass the limit after a penalty). */
  readonly used: number;
  /** Cost admissible now (what a take of cost 0 answers). */
  readonly remaining: number;
  /** When the limit is full again with no further requests (store time, ms). */
  readonly resetAt: number;
  /** When this limit's block ends (store time, ms); 0: not blocked. */
  readonly blockedUntil: number;
}

/**
 * A key's state in every limit, as `get` answers it (and `set`, `reward`, `penalty` leave it).
 * The top-level fields are the bound limit's: the one with the least `remaining`, as in a decision.
 */
export interface LimiterState {
  /** The bound limit's id. */
  readonly bound: string;
  readonly used: number;
  readonly remaining: number;
  readonly resetAt: number;
  /** The latest end of a block of the key's limits (store time, ms); 0: none blocked. */
  readonly blockedUntil: number;
  /** The store's time of the answer (ms). */
  readonly at: number;
  readonly limits: readonly LimitStateOf[];
}

/** A limiter: `take` decides one request. */
export interface Limiter {
  /**
   * Decides a request of `cost` (default 1) for `key`, or for several subjects
   * (`{ user: 'u1', ip: '10.0.0.1' }`, matched by each limit's `by`; a limit without `by` uses
   * the subject `key`). All limits admit it and are charged, or none is charged. With
   * `maxWait`, a refusal that a wait within it would lift waits and takes again (pacing).
   */
  take(key: LimiterKey, options?: TakeOptions): Promise<Decision>;
  /**
   * Forgets `key`'s usage in every limit (its store state, its block, its degraded-local
   * counters), after the takes called before it: its next take starts afresh. Resolves whether
   * the key had usage or a block (rate-limiter-flexible's `delete`, express-rate-limit's
   * `resetKey`). Needs a store with `limiterDelete` (all built-in stores); the answer is exact
   * with `limiterAdjust` (all built-in stores), else whether the store held any state.
   */
  reset(key: LimiterKey): Promise<boolean>;
  /**
   * The key's state in every limit, after the takes called before it; `undefined` when it has
   * none (no usage, no block). Changes nothing. Needs a store with `limiterAdjust`.
   */
  get(key: LimiterKey): Promise<LimiterState | undefined>;
  /**
   * Replaces the key's usage in every limit by `points` charged now (0: no usage), whatever the
   * limit; resolves the state it leaves (`undefined`: none). Windows stay aligned to the clock: the
   * usage counts as a take of `points` now would (there is no duration of its own: see
   * docs/limits.md). Needs `limiterAdjust`.
   */
  set(key: LimiterKey, points: number): Promise<LimiterState | undefined>;
  /** Gives `points` back to the key in every limit (never below no usage). Needs `limiterAdjust`. */
  reward(key: LimiterKey, points: number): Promise<LimiterState | undefined>;
  /** Charges `points` to the key in every limit, whatever the limit (usage may pass it). Needs `limiterAdjust`. */
  penalty(key: LimiterKey, points: number): Promise<LimiterState | undefined>;
  /**
   * Blocks the key in every limit with a `blockDuration` for `duration` from now (0: lifts the
   * block), whatever was set before: every take until then is refused, on every process. A
   * limiter with no `blockDuration` on any limit refuses it (`InvalidOptionError`): only those
   * limits read blocks. Needs `limiterAdjust`.
   */
  block(key: LimiterKey, duration: Duration): Promise<void>;
  /** The validated limits, in order. */
  readonly limits: readonly LimitSpec[];
  /**
   * Forgets what this process keeps of the limiter's state: its block cache and the counters of
   * its degraded-local limiter (after a reset of the limiter's keys).
   */
  clearBlocks(): void;
}
