/** The four limiter algorithms (DESIGN §3.5). */
export type Algorithm = 'sliding-log' | 'sliding-window' | 'fixed-window' | 'gcra';

/** One limit, validated and in whole milliseconds: what the math and the stores receive. */
export interface LimitSpec {
  /** Names the limit in results and headers (`'user/s'`); unique within a limiter. */
  readonly id: string;
  readonly algorithm: Algorithm;
  /** Cost admitted per window (for `gcra`: the rate, `limit` per `windowMs`). */
  readonly limit: number;
  readonly windowMs: number;
  /** `sliding-window`: bucket length (divides `windowMs`); `gcra`: the burst; otherwise 0. */
  readonly param: number;
}

/**
 * What one limit says about one request at one instant. A union on `allowed`: after
 * `if (v.allowed)`, `v.retryAfterMs` is `0`; otherwise it is the wait.
 */
export type Verdict =
  | {
      readonly allowed: true;
      /** Cost still admissible right now, after this request. */
      readonly remaining: number;
      /** When, with no further requests, the limit is back to full (`remaining === limit`). */
      readonly resetAt: number;
      /** Always 0 when allowed. */
      readonly retryAfterMs: 0;
    }
  | {
      readonly allowed: false;
      /** Cost still admissible right now. */
      readonly remaining: number;
      /** When, with no further requests, the limit is back to full (`remaining === limit`). */
      readonly resetAt: number;
      /**
       * The exact wait: the same request retried after `retryAfterMs` is admitted (if nothing
       * else is admitted meanwhile), and one millisecond earlier it is not. `Infinity` when the
       * cost exceeds what the limit can ever admit at once.
       */
      readonly retryAfterMs: number;
    };

/**
 * A verdict with the limit it speaks for: what a decision lists per limit. The math returns it
 * whole, so a decision needs no second object per limit.
 */
export type LimitVerdict = Verdict & {
  readonly id: string;
  readonly limit: number;
  readonly windowMs: number;
};

/**
 * The pure math of one algorithm: no I/O, no clock, time passed in. A decision is two steps so a
 * multi-limit decision can ask every limit first and charge all of them or none: `decide` never
 * changes the state; `commit` (called only when every limit allowed) records the cost.
 */
export interface AlgorithmMath<S> {
  /** Decides `cost` at `now` against `state` (`undefined`: nothing recorded yet). Pure. */
  decide(spec: LimitSpec, state: S | undefined, now: number, cost: number): LimitVerdict;
  /** Records an admitted `cost` at `now`; may reuse (and change) `state`, returns the new state. */
  commit(spec: LimitSpec, state: S | undefined, now: number, cost: number): S;
  /** From this instant on the state is equivalent to no state: it may be dropped (and its TTL ends). */
  expiresAt(spec: LimitSpec, state: S): number;
}

/** One limit of a store command: the spec and the store key its state lives under. */
export interface LimitCall {
  readonly spec: LimitSpec;
  /** The key (without the store's prefix); every key of one command shares one `{hash tag}`. */
  readonly key: string;
  /**
   * A store's own per-call memo. The limiter keeps its calls per subject, so a store may pin
   * what it found for this key here (the memory store keeps its entry: no Map lookup on the
   * next take of the same subject). Stores must check that a memo is theirs and still valid.
   */
  handle?: unknown;
}

/** One multi-limit decision, as a store receives it: all limits admit the cost, or none is charged. */
export interface LimiterTakeCommand {
  readonly limits: readonly LimitCall[];
  readonly cost: number;
  /** Decision time; `undefined`: the store's own clock (Redis `TIME`, the memory store's clock). */
  readonly now?: number | undefined;
  /**
   * How long the caller waits for the answer (ms from the call; `undefined`: as long as the
   * store takes). Past it the caller answers without the store (its degraded policy), so a remote
   * store must never charge the take later: the Redis store fences the command (see
   * src/redis/limiter-backend.ts). An in-process store answers at once and may ignore it.
   */
  readonly timeoutMs?: number | undefined;
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
