// What a take does around the store call that needs nothing of the limiter's own state: its
// options read, the store's answer bounded in time, the reply read as the decision's parts.
import { InvalidArgumentError, StoreError } from '../core/errors.js';
import { isPlainObject, knownKeys } from '../core/validate.js';
import type { LimiterTakeReply } from '../store/limiter.js';
import { limiterCost } from '../windows/limits/cost.js';
import type { LimitDecision } from '../windows/limits/decision.js';
import type { LimitSpec, Verdict } from '../windows/limits/types.js';
import { verdict } from '../windows/limits/verdict.js';

// A store's pending answer, bounded by the limiter's timeout when it has one.
export function timed(pending: PromiseLike<LimiterTakeReply>, timeoutMs: number): Promise<LimiterTakeReply> {
  // Promise.resolve hands a native promise back as it is (no promise more per take).
  if (timeoutMs === 0) return Promise.resolve(pending);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new StoreError('limiterTake', new Error(`no answer within ${timeoutMs} ms`))),
      timeoutMs,
    );
    pending.then(
      (r) => {
        clearTimeout(timer);
        resolve(r);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/** The reply's verdicts as a decision's parts, in the limiter's order. */
export function partsOf(reply: LimiterTakeReply, forSpecs: readonly LimitSpec[]): LimitDecision[] {
  // The built-in stores answer each limit's verdict with its id, limit and window (the math
  // returns them whole): the reply's fresh array is the decision's list as it is.
  const verdicts = reply.verdicts;
  let whole = verdicts.length === forSpecs.length;
  for (let i = 0; whole && i < forSpecs.length; i++) {
    whole = (verdicts[i] as Partial<LimitDecision>).id === (forSpecs[i] as LimitSpec).id;
  }
  if (whole) return verdicts as LimitDecision[];
  const parts: LimitDecision[] = [];
  for (let i = 0; i < forSpecs.length; i++) {
    const v = verdicts[i] as Verdict;
    // Field by field (verdict()): an object spread here makes every take ~7x slower in V8
    // (`node --expose-gc scripts/limiter-memory-ab.mjs`, a dist of each form).
    parts.push(verdict(forSpecs[i] as LimitSpec, v.allowed, v.remaining, v.resetAt, v.retryAfterMs));
  }
  return parts;
}

const TAKE_OPTIONS = ['cost', 'maxWait'];

/** A take's cost from its options: 1 by default, else checked (a typed error naming it). */
export function costOf(takeOptions: { cost?: number } | undefined): number {
  if (takeOptions === undefined) return 1;
  if (!isPlainObject(takeOptions)) {
    throw new InvalidArgumentError('options', 'an object like { cost }', takeOptions);
  }
  // A misspelt `cost` would charge 1. `for...in` allocates nothing on this hot path; knownKeys
  // then reads own keys only, so an inherited enumerable key (a polluted prototype) passes.
  for (const k in takeOptions) if (k !== 'cost') knownKeys('options', takeOptions, TAKE_OPTIONS, 'argument');
  return takeOptions.cost === undefined ? 1 : limiterCost(takeOptions.cost);
}
