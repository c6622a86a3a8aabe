import type { Clock } from '../core/clock.js';
import { InvalidArgumentError } from '../core/errors.js';
import { MATH } from './algorithms.js';
import type { LimitCall, LimiterTakeCommand, LimiterTakeReply, Verdict } from './types.js';

interface Entry {
  state: unknown;
  expiresAt: number;
  /** The backend holding it: a memo from another backend is ignored. */
  readonly owner: object;
  /** Removed from the map (swept or reset): a memo pointing here is stale. */
  dead: boolean;
}

/** The limiter side of the memory store: the reference model every other store is tested against. */
export interface MemoryLimiterBackend {
  take(command: LimiterTakeCommand): LimiterTakeReply;
  /** Drops every state whose key lies in `namespace`'s key space; returns how many. */
  reset(namespace: string): number;
  /** Keys held (expired ones are dropped as the sweep passes them). */
  readonly size: number;
}

// Expired states are dropped by a full pass once the takes since the last pass reach the map's
// size (at least SWEEP_MIN): amortised one entry visited per take, memory proportional to the
// keys active within one window, no timer per key (rate-limiter-flexible's memory limiter pays
// one setTimeout per key) and no allocation per visit (Map#forEach; an iterator stepped a few
// entries per take allocated two objects per entry). The pass is O(keys): ~10 ms per million.
const SWEEP_MIN = 1024;

/** Limiter state in a Map, one synchronous block per decision (atomic by construction). */
export function createMemoryLimiterBackend(clock: Clock): MemoryLimiterBackend {
  const entries = new Map<string, Entry>();
  const self = {};
  // The entry of a call: its memo when valid (the common case: a hot subject), else the map.
  const entryOf = (call: LimitCall): Entry | undefined => {
    const memo = call.handle as Entry | undefined;
    if (memo !== undefined && memo.owner === self && !memo.dead) return memo;
    const entry = entries.get(call.key);
    if (entry !== undefined) call.handle = entry;
    return entry;
  };
  let sinceSweep = 0;
  const sweep = (now: number) => {
    sinceSweep = 0;
    entries.forEach((entry, key) => {
      if (entry.expiresAt <= now) {
        entries.delete(key);
        entry.dead = true;
      }
    });
  };

  return {
    take({ limits, cost, now: given }) {
      const now = given ?? storeNow(clock);
      if (++sinceSweep >= SWEEP_MIN && sinceSweep >= entries.size) sweep(now);
      const verdicts: Verdict[] = new Array(limits.length);
      let allowed = true;
      for (let i = 0; i < limits.length; i++) {
        const call = limits[i] as LimitCall;
        const entry = entryOf(call);
        const state = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
        const verdict = MATH[call.spec.algorithm].decide(call.spec, state, now, cost);
        verdicts[i] = verdict;
        if (!verdict.allowed) allowed = false;
      }
      if (!allowed) {
        // Nothing is charged: a limit that would have admitted reports itself as it is now (its
        // answer to a cost of 0), not as it would have been after this request.
        for (let i = 0; i < limits.length; i++) {
          if (!(verdicts[i] as Verdict).allowed) continue;
          const call = limits[i] as LimitCall;
          const entry = entryOf(call);
          const state = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
          verdicts[i] = MATH[call.spec.algorithm].decide(call.spec, state, now, 0);
        }
      } else if (cost > 0) {
        for (const call of limits) {
          const { spec } = call;
          const math = MATH[spec.algorithm];
          const entry = entryOf(call);
          const live = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
          const state = math.commit(spec, live, now, cost);
          const expiresAt = math.expiresAt(spec, state);
          if (entry === undefined) {
            const created: Entry = { state, expiresAt, owner: self, dead: false };
            entries.set(call.key, created);
            call.handle = created;
          } else {
            entry.state = state;
            entry.expiresAt = expiresAt;
          }
        }
      }
      return { now, allowed, verdicts };
    },
    reset(namespace) {
      let n = 0;
      for (const [key, entry] of entries) {
        if (inNamespace(key, namespace)) {
          entries.delete(key);
          entry.dead = true;
          n++;
        }
      }
      return n;
    },
    get size() {
      return entries.size;
    },
  };
}

/**
 * The store's own time for a decision, checked and whole (as Redis's TIME is): a clock answering
 * NaN would otherwise make every comparison false and admit everything, a silent fail-open. The
 * error is a store failure: the limiter's degraded policy decides what happens next.
 */
function storeNow(clock: Clock): number {
  const t = clock.now();
  if (Number.isSafeInteger(t)) return t; // Date.now(), a FakeClock: the common case, one check
  if (typeof t !== 'number' || !(Math.abs(t) <= Number.MAX_SAFE_INTEGER)) {
    throw new InvalidArgumentError('store clock.now()', 'a number of milliseconds within ±(2^53 - 1)', t);
  }
  return Math.floor(t);
}

/** True when `key` (`{<namespace>:...}...` or `{<namespace>}...`) belongs to `namespace`. */
export function inNamespace(key: string, namespace: string): boolean {
  const open = `{${namespace}`;
  if (!key.startsWith(open)) return false;
  const next = key.charCodeAt(open.length);
  return next === 58 /* : */ || next === 125 /* } */;
}
