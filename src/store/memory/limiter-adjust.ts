// The memory store's limiterAdjust (get, delete, set, reward, penalty, block): the reference the
// Redis script and the PostgreSQL function are tested against (conformance suite limiter-adjust).
// The backend (limiter.ts) gives it its entries; everything here runs in one synchronous call.
import { InvalidArgumentError } from '../../core/errors.js';
import {
  checkBlockMs,
  checkNotAfter,
  checkPoints,
  penaltyFits,
  rewarded,
  setTo,
  usageOf,
} from '../../windows/limits/adjust.js';
import { MATH } from '../../windows/limits/algorithms.js';
import type { LimitSpec } from '../../windows/limits/types.js';
import type { LimitCall, LimiterAdjustCommand, LimiterAdjustReply, LimitState } from '../limiter.js';

/** What an adjust reads of a backend entry. */
export interface AdjustEntry {
  state: unknown;
  expiresAt: number;
  /** When a block of this limit ends (store time); 0: none. Read only by limits with `blockMs`. */
  blockedUntil: number;
}

/** The backend's side of an adjust: its clock, its entries and how it writes them. */
export interface AdjustAccess {
  /** The operation's time (read after the command's shape is checked). */
  now(): number;
  entry(call: LimitCall, index: number): AdjustEntry | undefined;
  /** Keeps a new state (an existing entry's, or a new entry). */
  keep(call: LimitCall, entry: AdjustEntry | undefined, state: unknown): void;
  /** Sets (until > 0) or lifts a block. */
  setBlock(call: LimitCall, entry: AdjustEntry | undefined, until: number): void;
  /** Drops an entry, state and block. */
  drop(call: LimitCall, entry: AdjustEntry): void;
}

const OPS: readonly LimiterAdjustCommand['op'][] = ['get', 'delete', 'set', 'reward', 'penalty', 'block'];

/** An entry's state while it counts: a state read after its expiry decides as no state. */
export function liveState(entry: AdjustEntry | undefined, now: number): unknown {
  return entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
}

/** When an entry's block ends, or 0 when it is not blocked at `now`. */
export function blockOf(entry: AdjustEntry | undefined, now: number): number {
  return entry !== undefined && entry.blockedUntil > now ? entry.blockedUntil : 0;
}

/** One adjust: checked whole first (a malformed command, or a penalty past the cap, changes nothing). */
export function adjustStates(command: LimiterAdjustCommand, access: AdjustAccess): LimiterAdjustReply {
  const { limits, points, durationMs } = command;
  let op = command.op;
  if (!OPS.includes(op)) throw new InvalidArgumentError('op', OPS.join(', '), op);
  const notAfter = checkNotAfter(op, command.notAfter);
  if (!Array.isArray(limits)) throw new InvalidArgumentError('limits', 'an array of limit calls', limits);
  const entries = limits.map((call, i) => access.entry(call, i));
  const specs = limits.map((call) => call.spec);
  const p = op === 'set' || op === 'reward' || op === 'penalty' ? checkPoints(points, specs) : 0;
  const ms = op === 'block' ? checkBlockMs(durationMs, 'durationMs') : 0;
  const now = access.now();
  // Past its deadline a reward changes nothing: it answers as a get.
  if (notAfter !== undefined && now >= notAfter) op = 'get';
  if (op === 'penalty') {
    // All or nothing: every limit is checked before any is charged.
    for (let i = 0; i < limits.length; i++) {
      if (!penaltyFits(specs[i] as LimitSpec, liveState(entries[i], now), now, p)) {
        throw new InvalidArgumentError('points', 'a penalty that keeps usage x window at or below 2^52', p);
      }
    }
  }
  const states: LimitState[] = [];
  for (let i = 0; i < limits.length; i++) {
    const call = limits[i] as LimitCall;
    const spec = call.spec;
    const entry = entries[i];
    const live = liveState(entry, now);
    if (op === 'get' || op === 'delete' || (op === 'penalty' && p === 0)) {
      // A penalty of 0 writes nothing (as the other stores): a state expired at `now` stays, to
      // count again if the clock steps back.
      states.push(stateOf(spec, live, blockOf(entry, now), now));
      if (op === 'delete' && entry !== undefined) access.drop(call, entry);
      continue;
    }
    if (op === 'block') {
      const until = ms > 0 ? now + ms : 0;
      access.setBlock(call, entry, until);
      states.push(stateOf(spec, live, until, now));
      continue;
    }
    const next =
      op === 'set'
        ? setTo(spec, now, p)
        : op === 'reward'
          ? rewarded(spec, live, now, p)
          : MATH[spec.algorithm].commit(spec, live, now, p);
    if (next !== undefined) access.keep(call, entry, next);
    else if (entry !== undefined) {
      // No usage left: the entry decides as no state (its block, if any, stays).
      entry.state = undefined;
      entry.expiresAt = 0;
    }
    states.push(stateOf(spec, next, blockOf(access.entry(call, i), now), now));
  }
  return { now, states };
}

// A limit's state as an adjust answers it: its usage, and a take's answer at cost 0.
function stateOf(spec: LimitSpec, state: unknown, blockedUntil: number, now: number): LimitState {
  const v = MATH[spec.algorithm].decide(spec, state, now, 0);
  return { used: usageOf(spec, state, now), remaining: v.remaining, resetAt: v.resetAt, blockedUntil };
}
