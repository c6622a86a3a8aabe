import type { LimitSpec, LimitVerdict, Verdict } from '../windows/limits/types.js';

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
