import type { LimitVerdict } from './types.js';

/** Why a decision came out as it did. */
export type DecisionReason =
  /** The store admitted the request and charged every limit. */
  | 'allowed'
  /** The store refused: a limit is spent (`bound` names it); nothing was charged. */
  | 'limited'
  /** Refused locally by the block cache, without a store call: the store refused it before. */
  | 'blocked'
  /** The cost exceeds what the bound limit can admit at once: it never passes (`retryAfterMs` is Infinity). */
  | 'cost-exceeds-limit'
  /** The store failed or timed out and the degraded policy is `'deny'`. */
  | 'degraded-deny'
  /** The store failed or timed out and the degraded policy is `'allow'` (admitted without counting). */
  | 'degraded-allow'
  /** The store failed or timed out; this node's local limiter decided, with its share of the limit. */
  | 'degraded-local';

/** One limit's part of a decision: its verdict, with the limit it speaks for. */
export type LimitDecision = LimitVerdict;

/** The answer of `take`: expected outcomes are values, never exceptions. */
export interface Decision {
  readonly allowed: boolean;
  /** The bound limit's `limit`. */
  readonly limit: number;
  /** Cost still admissible now under the bound limit. */
  readonly remaining: number;
  /** When the bound limit is full again with no further requests (store time, ms). */
  readonly resetAt: number;
  /** 0 when allowed; otherwise the exact wait (see {@link LimitVerdict.retryAfterMs}). */
  readonly retryAfterMs: number;
  readonly reason: DecisionReason;
  /**
   * The limit that decided: when refused, the refusing limit with the longest wait (waiting that
   * long satisfies every limit); when allowed, the one with the least remaining.
   */
  readonly bound: string;
  /** Decision time (store time, ms): `resetAt - at` is the wait in the store's clock. */
  readonly at: number;
  /** Every limit's part, in the limiter's order. */
  readonly limits: readonly LimitDecision[];
}

/** Builds the decision from per-limit parts. */
export function decide(
  at: number,
  allowed: boolean,
  parts: LimitDecision[],
  reason: DecisionReason | undefined,
): Decision {
  let pick = parts[0] as LimitDecision;
  for (let i = 1; i < parts.length; i++) {
    const p = parts[i] as LimitDecision;
    if (allowed ? p.remaining < pick.remaining : betterBound(p, pick)) pick = p;
  }
  return {
    allowed,
    limit: pick.limit,
    remaining: pick.remaining,
    resetAt: pick.resetAt,
    retryAfterMs: allowed ? 0 : pick.retryAfterMs,
    reason:
      reason ??
      (allowed
        ? 'allowed'
        : pick.retryAfterMs === Number.POSITIVE_INFINITY
          ? 'cost-exceeds-limit'
          : 'limited'),
    bound: pick.id,
    at,
    limits: parts,
  };
}

function betterBound(p: LimitDecision, pick: LimitDecision): boolean {
  if (p.allowed) return false;
  if (pick.allowed) return true;
  return p.retryAfterMs > pick.retryAfterMs;
}
