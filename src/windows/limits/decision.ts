import type { LimitSpec, LimitVerdict } from './types.js';

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

/**
 * The reasons of an admitted decision (`allowed: true`): `'allowed'`, `'degraded-allow'`, or
 * `'degraded-local'` when this node's local limiter admitted it.
 *
 * @example
 * ```ts
 * const limiter = createLimiter({ algorithm: 'fixed-window', limit: 1, window: '1m' });
 * const d = await limiter.take('user-1');
 * const why = d.allowed ? d.reason : 'refused'; // 'allowed' | 'degraded-allow' | 'degraded-local' | 'refused'
 * why; // 'allowed'
 * ```
 */
export type AllowingReason = Extract<DecisionReason, 'allowed' | 'degraded-allow' | 'degraded-local'>;

/**
 * The reasons of a refused decision (`allowed: false`): `'limited'`, `'blocked'`,
 * `'cost-exceeds-limit'`, `'degraded-deny'`, or `'degraded-local'` when this node's local
 * limiter refused it.
 *
 * @example
 * ```ts
 * const limiter = createLimiter({ algorithm: 'fixed-window', limit: 1, window: '1m' });
 * await limiter.take('user-1');
 * const d = await limiter.take('user-1');
 * const why = d.allowed ? 'admitted' : d.reason;
 * why; // 'limited'
 * ```
 */
export type RefusingReason = Extract<
  DecisionReason,
  'limited' | 'blocked' | 'cost-exceeds-limit' | 'degraded-deny' | 'degraded-local'
>;

/** One limit's part of a decision: its verdict, with the limit it speaks for. */
export type LimitDecision = LimitVerdict;

/** What every decision holds, admitted or refused. */
interface DecisionFields {
  /** The bound limit's `limit`. */
  readonly limit: number;
  /** Cost still admissible now under the bound limit. */
  readonly remaining: number;
  /** When the bound limit is full again with no further requests (store time, ms). */
  readonly resetAt: number;
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

/**
 * A {@link Decision} that admitted the request: every limit was charged (or, degraded, none was
 * asked). `retryAfterMs` is `0`, the `reason` one of {@link AllowingReason}.
 *
 * @example
 * ```ts
 * const limiter = createLimiter({ algorithm: 'gcra', limit: 5, window: '1s' });
 * const d = await limiter.take('user-1');
 * if (d.allowed) {
 *   const admitted: AllowedDecision = d; // narrowed by `allowed`
 *   admitted.retryAfterMs; // 0
 * }
 * ```
 */
export interface AllowedDecision extends DecisionFields {
  readonly allowed: true;
  /**
   * This take found the bound limit with no usage (its window opened, or its state had run
   * out): rate-limiter-flexible's `isFirstInDuration`. Only the store's answer tells it
   * (`reason: 'allowed'` or `'degraded-local'`); a degraded admission answers false.
   */
  readonly isFirstInDuration: boolean;
  /** Always 0: nothing to wait for. */
  readonly retryAfterMs: 0;
  readonly reason: AllowingReason;
}

/**
 * A {@link Decision} that refused the request: nothing was charged. `retryAfterMs` is the exact
 * wait (see {@link LimitVerdict.retryAfterMs}; `Infinity` for `'cost-exceeds-limit'`), the
 * `reason` one of {@link RefusingReason}.
 *
 * @example
 * ```ts
 * const clock = new FakeClock(0);
 * const limiter = createLimiter({ store: memoryStore({ clock }), clock, algorithm: 'fixed-window', limit: 1, window: '1m' });
 * await limiter.take('user-1');
 * clock.advance(1000);
 * const d = await limiter.take('user-1');
 * if (!d.allowed) {
 *   const refused: RefusedDecision = d; // narrowed by `allowed`
 *   [refused.reason, refused.retryAfterMs]; // ['limited', 59000]
 * }
 * ```
 */
export interface RefusedDecision extends DecisionFields {
  readonly allowed: false;
  /** Always false: nothing was charged. */
  readonly isFirstInDuration: false;
  /** The exact wait: the same request retried after it is admitted (if nothing else is meanwhile). */
  readonly retryAfterMs: number;
  readonly reason: RefusingReason;
}

/**
 * The answer of `take`: expected outcomes are values, never exceptions. A union on `allowed`:
 * after `if (d.allowed)`, `d.reason` is an {@link AllowingReason} and `d.retryAfterMs` is `0`;
 * otherwise `d.reason` is a {@link RefusingReason} and `d.retryAfterMs` the wait.
 */
export type Decision = AllowedDecision | RefusedDecision;

/**
 * Builds the decision from per-limit parts. `cost` and `specs` (the limits the parts answer, in
 * order) tell `isFirstInDuration`: an admission whose bound limit has `remaining + cost` equal
 * to its capacity (the limit; GCRA's burst) found no usage there. Without them it is false.
 */
export function decide(
  at: number,
  allowed: true,
  parts: LimitDecision[],
  reason: AllowingReason | undefined,
  cost?: number,
  specs?: readonly LimitSpec[],
): AllowedDecision;
export function decide(
  at: number,
  allowed: false,
  parts: LimitDecision[],
  reason: RefusingReason | undefined,
  cost?: number,
  specs?: readonly LimitSpec[],
): RefusedDecision;
export function decide(
  at: number,
  allowed: boolean,
  parts: LimitDecision[],
  reason: DecisionReason | undefined,
  cost?: number,
  specs?: readonly LimitSpec[],
): Decision;
export function decide(
  at: number,
  allowed: boolean,
  parts: LimitDecision[],
  reason: DecisionReason | undefined,
  cost = -1,
  specs?: readonly LimitSpec[],
): Decision {
  let pick = parts[0] as LimitDecision;
  for (let i = 1; i < parts.length; i++) {
    const p = parts[i] as LimitDecision;
    if (allowed ? p.remaining < pick.remaining : betterBound(p, pick)) pick = p;
  }
  // One object literal for both answers (one shape, as V8 sees it): its fields agree with
  // `allowed` as the union says, by construction (retryAfterMs 0 and an allowing reason when
  // allowed), which TypeScript cannot follow through the conditionals.
  let first = false;
  if (allowed && cost >= 0 && specs !== undefined) {
    for (let i = 0; i < specs.length; i++) {
      const spec = specs[i] as LimitSpec;
      if (spec.id === pick.id) {
        first = pick.remaining + cost === (spec.algorithm === 'gcra' ? spec.param : spec.limit);
        break;
      }
    }
  }
  return {
    allowed,
    isFirstInDuration: first,
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
  } as Decision;
}

function betterBound(p: LimitDecision, pick: LimitDecision): boolean {
  if (p.allowed) return false;
  if (pick.allowed) return true;
  return p.retryAfterMs > pick.retryAfterMs;
}
