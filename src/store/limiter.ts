// The limiter half of the Store contract (DESIGN §3.5): what a store receives and answers for
// rate limiting. Stores get identities (a namespace, a subject, the limits) and build their own
// keys from them; every decision is one atomic step of the store.
import type { LimitSpec, LimitVerdict, Verdict } from '../windows/limits/types.js';

/**
 * One limit of a take, for one subject. A store keeps one state per (namespace, `by`, subject,
 * `spec.id`, shape). The shape is the algorithm, `windowMs` and `param` (bucket or burst), and
 * for `gcra` also `limit` (its state is a time in units of window / limit); a store may add its own
 * representation (the built-in ones keep a sliding log above limit 512 in another form). A limit
 * whose shape changes starts on a fresh state instead of reading one of another shape; the old
 * state runs out on its own expiry.
 *
 * A store may keep what it derives from a call object (its key, its state) for as long as it
 * sees that object: a caller never changes a call it has given to a store (the limiter makes a new
 * one when anything in it changes).
 */
export interface LimitCall {
  readonly spec: LimitSpec;
  /** What the limit counts by: a user id, an API key, an IP address. */
  readonly subject: string;
  /**
   * The subject's name (the limit's `by`; `'key'` for the plain key), given when the limits of
   * one take count by different subjects, absent when they all count by this one. Given, the
   * state is the same whichever other subjects a take names (a per-IP counter is one state,
   * checked with any user), so a store must reach every such state of a namespace in one atomic
   * step (on Redis: one hash tag per namespace, one slot). All limits of a take give it, or none.
   */
  readonly by?: string | undefined;
}

/** One multi-limit decision, as a store receives it: all limits admit the cost, or none is charged. */
export interface LimiterTakeCommand {
  /**
   * The limiter's key space (opaque to the store): states of different namespaces never meet,
   * and `limiterReset(namespace)` drops exactly one namespace's states.
   */
  readonly namespace: string;
  readonly limits: readonly LimitCall[];
  readonly cost: number;
  /** Decision time; `undefined`: the store's own clock (Redis `TIME`, the memory store's clock). */
  readonly now?: number | undefined;
  /**
   * How long the caller waits for the answer (ms from the call; `undefined`: as long as the
   * store takes). Past it the caller answers without the store (its degraded policy), so a remote
   * store must never charge the take later: the Redis store fences the command (see
   * src/redis/limiter-ops.ts). A store that answers at once may ignore it.
   */
  readonly timeoutMs?: number | undefined;
}

/** The states to drop: these limits' for these subjects, in `namespace` (a `LimiterTakeCommand` without cost or time). */
export interface LimiterDeleteCommand {
  readonly namespace: string;
  readonly limits: readonly LimitCall[];
}

/**
 * The store's answer: the decision time and one verdict per limit, in order. When the decision is
 * refused, nothing was charged, and every limit's verdict describes it as it is now (a limit that
 * would have admitted answers as to a cost of 0).
 */
export interface LimiterTakeReply {
  readonly now: number;
  readonly allowed: boolean;
  /**
   * One per limit, in the command's order. The built-in stores answer whole {@link LimitVerdict}s
   * (the limiter then lists them as they are); a plain verdict is completed from the spec.
   */
  readonly verdicts: readonly (Verdict | LimitVerdict)[];
}

/**
 * A state operation on these limits for these subjects (rate-limiter-flexible's get, delete,
 * set, reward, penalty, block), one atomic step for all of them, after every take this process
 * sent before:
 * - `get`: changes nothing.
 * - `delete`: drops the states and blocks (`states` answers them as they were).
 * - `set`: each state replaced by `points` charged at `now` (0: dropped).
 * - `reward`: `points` given back, never below no usage (see `rewarded` in src/windows/limits/adjust.ts).
 * - `penalty`: `points` charged whatever the limit (usage may pass it).
 * - `block`: each limit blocked until `now + durationMs` (0: unblocked), whatever was set before;
 *   only takes of a limit with `spec.blockMs` read it.
 * Usage x window stays at or below 2^52 (`points` above it, or a penalty that would pass it,
 * rejects with an `InvalidArgumentError` and changes nothing).
 */
export interface LimiterAdjustCommand {
  readonly namespace: string;
  readonly limits: readonly LimitCall[];
  readonly op: 'get' | 'delete' | 'set' | 'reward' | 'penalty' | 'block';
  /** `set`, `reward`, `penalty`: a non-negative safe integer. */
  readonly points?: number | undefined;
  /** `block`: whole ms in [0, 1 year]. */
  readonly durationMs?: number | undefined;
  /** Operation time; `undefined`: the store's own clock. */
  readonly now?: number | undefined;
  /**
   * `reward` only: give back only while the operation time is before this (store time, ms); at or
   * after it the command changes nothing and answers as `get`. The check and the reward are one
   * atomic step, so a reward sent late (a slow network, a busy store) cannot land past it: a
   * local-first limiter returns an unused share only while the share still counts in the window
   * it was charged to (src/limiter/local-first.ts).
   */
  readonly notAfter?: number | undefined;
}

/** One limit's state as an adjust leaves it (`delete`: as it was). */
export interface LimitState {
  /** Usage counted against the limit now (0: no state); may pass the limit after a penalty. */
  readonly used: number;
  /** What a take at cost 0 answers: cost admissible now, and when the limit is full again. */
  readonly remaining: number;
  readonly resetAt: number;
  /** When the block ends (store time, ms); 0: not blocked. */
  readonly blockedUntil: number;
}

/** The answer of `limiterAdjust`: the operation time and one state per limit, in order. */
export interface LimiterAdjustReply {
  readonly now: number;
  readonly states: readonly LimitState[];
}
