// What the limiter adds around the store's state operations (limiterAdjust) and its takes:
// a store's reply as a key's state, and pacing (a refusal waited out instead of answered).
import type { Duration } from '../core/duration.js';
import { InvalidArgumentError, InvalidOptionError, StoreError } from '../core/errors.js';
import { timerDelay, timerDuration } from '../core/timer-delay.js';
import type { LimitCall, LimiterAdjustCommand, LimiterAdjustReply, LimitState } from '../store/limiter.js';
import type { Store } from '../store/store.js';
import { checkBlockMs, checkPoints } from '../windows/limits/adjust.js';
import type { Decision } from '../windows/limits/decision.js';
import type { LimitSpec } from '../windows/limits/types.js';
import type { LimiterState, LimitStateOf } from './types.js';

/** What a state operation on one key needs of its limiter. */
export interface StateTarget {
  readonly store: Store;
  readonly namespace: string;
  /** The limiter's limits, and one call per limit for the key, in the same order. */
  readonly specs: readonly LimitSpec[];
  readonly calls: readonly LimitCall[];
  /** The time passed to the store (`undefined`: the store's own). */
  readonly now: number | undefined;
}

/**
 * Drops the key's states and blocks; resolves whether it had usage or a block. Exact with
 * `limiterAdjust` (read and dropped in one step), else whether `limiterDelete` found any state.
 */
export async function resetKey(t: StateTarget): Promise<boolean> {
  const { store } = t;
  if (typeof store.limiterAdjust !== 'function' && typeof store.limiterDelete !== 'function') {
    // What is wrong is the limiter's store, not the key (named as the other factories name it).
    throw new InvalidOptionError(
      'store',
      'a store that can delete limiter state (limiterDelete) for reset()',
      store,
    );
  }
  try {
    if (typeof store.limiterAdjust === 'function') {
      const reply = await store.limiterAdjust({
        namespace: t.namespace,
        limits: t.calls,
        op: 'delete',
        now: t.now,
      });
      return stateOfReply(reply, t.specs) !== undefined;
    }
    return (
      (await (store.limiterDelete as NonNullable<Store['limiterDelete']>)({
        namespace: t.namespace,
        limits: t.calls,
      })) > 0
    );
  } catch (err) {
    throw err instanceof StoreError || err instanceof InvalidArgumentError
      ? err
      : new StoreError('limiterDelete', err);
  }
}

/**
 * One state operation on every limit of the key (for `block`, on every limit with a
 * `blockDuration`: only those read blocks); resolves the state it leaves.
 */
export async function adjustKey(
  t: StateTarget,
  op: LimiterAdjustCommand['op'],
  points?: number,
  durationMs?: number,
): Promise<LimiterState | undefined> {
  const { store } = t;
  if (typeof store.limiterAdjust !== 'function') {
    throw new InvalidOptionError('store', `a store with limiterAdjust for ${op}()`, store);
  }
  const picked = t.specs.map((s) => op !== 'block' || (s.blockMs ?? 0) > 0);
  const specs = t.specs.filter((_, i) => picked[i]);
  if (specs.length === 0) {
    throw new InvalidOptionError(
      'blockDuration',
      'set on at least one limit for block() (only those limits read blocks)',
      undefined,
    );
  }
  // Checked here too, before any store is asked (the built-in stores check them again).
  if (points !== undefined) checkPoints(points, specs);
  let reply: LimiterAdjustReply;
  try {
    reply = await store.limiterAdjust({
      namespace: t.namespace,
      limits: t.calls.filter((_, i) => picked[i]),
      op,
      points,
      durationMs,
      now: t.now,
    });
  } catch (err) {
    throw err instanceof StoreError || err instanceof InvalidArgumentError
      ? err
      : new StoreError('limiterAdjust', err);
  }
  return stateOfReply(reply, specs);
}

/** A block's duration in ms (0 lifts it): a Duration, checked as a timer's and at most a year. */
export function blockDurationMs(duration: Duration): number {
  const ms = duration === 0 || duration === '0ms' ? 0 : timerDuration('duration', duration);
  return checkBlockMs(ms, 'duration');
}

/**
 * A store's adjust reply as a key's state; `undefined` when no limit holds usage or a block (the
 * key has no state: rate-limiter-flexible's `get` answering null).
 */
export function stateOfReply(
  reply: LimiterAdjustReply,
  specs: readonly LimitSpec[],
): LimiterState | undefined {
  if (
    reply === null ||
    typeof reply !== 'object' ||
    !Array.isArray(reply.states) ||
    reply.states.length !== specs.length
  ) {
    throw new TypeError(`limiterAdjust answered ${JSON.stringify(reply)}, not one state per limit`);
  }
  let any = false;
  let blockedUntil = 0;
  const limits: LimitStateOf[] = specs.map((spec, i) => {
    const s = reply.states[i] as LimitState;
    if (s.used > 0 || s.blockedUntil > 0) any = true;
    if (s.blockedUntil > blockedUntil) blockedUntil = s.blockedUntil;
    return {
      id: spec.id,
      limit: spec.limit,
      windowMs: spec.windowMs,
      used: s.used,
      remaining: s.remaining,
      resetAt: s.resetAt,
      blockedUntil: s.blockedUntil,
    };
  });
  if (!any) return undefined;
  let bound = limits[0] as LimitStateOf;
  for (const l of limits) if (l.remaining < bound.remaining) bound = l;
  return {
    bound: bound.id,
    used: bound.used,
    remaining: bound.remaining,
    resetAt: bound.resetAt,
    blockedUntil,
    at: reply.now,
    limits,
  };
}

/**
 * Takes until admitted, or until the wait a refusal names would pass what is left of `maxWaitMs`:
 * then that refusal is the answer. Only a refusal that waiting lifts is waited out (`limited`,
 * `blocked`); a cost above the limit, a degraded answer or an error is answered at once. Each
 * wait is at least 1 ms, so there are at most `maxWaitMs` rounds.
 */
export async function paced(take: () => Promise<Decision>, maxWaitMs: number): Promise<Decision> {
  let left = maxWaitMs;
  for (;;) {
    const d = await take();
    if (d.allowed || (d.reason !== 'limited' && d.reason !== 'blocked')) return d;
    const wait = Math.max(1, d.retryAfterMs);
    if (wait > left) return d;
    left -= wait;
    await new Promise((resolve) => setTimeout(resolve, timerDelay(wait)));
  }
}
