import type { LimitSpec, LimitVerdict } from './types.js';

/**
 * A limit's verdict, with the limit it speaks for (`id`, `limit`, `windowMs` from `spec`): what
 * every algorithm's `decide` returns, so a decision lists it as it is. One shape for all four
 * algorithms (the fields in one order), which keeps the code that reads verdicts monomorphic.
 */
export function verdict(
  spec: Pick<LimitSpec, 'id' | 'limit' | 'windowMs'>,
  allowed: boolean,
  remaining: number,
  resetAt: number,
  retryAfterMs: number,
): LimitVerdict {
  // One object literal for both answers (one shape): every caller passes 0 as the wait of an
  // allowed verdict, as the union says, which TypeScript cannot see through a boolean.
  return {
    allowed,
    remaining,
    resetAt,
    retryAfterMs,
    id: spec.id,
    limit: spec.limit,
    windowMs: spec.windowMs,
  } as LimitVerdict;
}
