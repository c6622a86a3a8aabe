// What the limiter adds around the store's state operations (limiterAdjust) and its takes:
// a store's reply as a key's state, and pacing (a refusal waited out instead of answered).
import { setTimeout as sleep } from 'node:timers/promises';
import type { LimiterAdjustReply, LimitState } from '../store/limiter.js';
import type { Decision } from '../windows/limits/decision.js';
import type { LimitSpec } from '../windows/limits/types.js';
import type { LimiterState, LimitStateOf } from './types.js';

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
    await sleep(wait);
  }
}
