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
  /**
   * How long a refusal of this limit blocks the subject's state (ms; 0 or absent: never): every
   * take until then is refused by this limit, on every process (the block is kept in the store).
   * Only a limit with one reads a block, so only such a limit can be blocked.
   */
  readonly blockMs?: number;
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
