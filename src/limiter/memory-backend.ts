import type { Clock } from '../core/clock.js';
import { MATH } from './algorithms.js';
import type { LimiterTakeCommand, LimiterTakeReply, Verdict } from './types.js';

interface Entry {
  state: unknown;
  expiresAt: number;
}

/** The limiter side of the memory store: the reference model every other store is tested against. */
export interface MemoryLimiterBackend {
  take(command: LimiterTakeCommand): LimiterTakeReply;
  /** Drops every state whose key lies in `namespace`'s key space; returns how many. */
  reset(namespace: string): number;
  /** Keys held (expired ones are dropped as the sweep passes them). */
  readonly size: number;
}

// Each take also looks at this many entries of the map for expired state, so an idle key is
// dropped within size / 2 takes: memory stays proportional to the keys active in one window,
// with no timer per key (rate-limiter-flexible's memory limiter pays one setTimeout per key).
const SWEEP_PER_TAKE = 2;

/** Limiter state in a Map, one synchronous block per decision (atomic by construction). */
export function createMemoryLimiterBackend(clock: Clock): MemoryLimiterBackend {
  const entries = new Map<string, Entry>();
  let sweep = entries.entries();

  const sweepSome = (now: number) => {
    for (let n = 0; n < SWEEP_PER_TAKE; n++) {
      const step = sweep.next();
      if (step.done) {
        sweep = entries.entries();
        return;
      }
      const [key, entry] = step.value;
      if (entry.expiresAt <= now) entries.delete(key);
    }
  };

  return {
    take({ limits, cost, now: given }) {
      const now = given ?? clock.now();
      sweepSome(now);
      const verdicts: Verdict[] = new Array(limits.length);
      let allowed = true;
      for (let i = 0; i < limits.length; i++) {
        const { spec, key } = limits[i] as (typeof limits)[number];
        const entry = entries.get(key);
        const state = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
        const verdict = MATH[spec.algorithm].decide(spec, state, now, cost);
        verdicts[i] = verdict;
        if (!verdict.allowed) allowed = false;
      }
      if (allowed && cost > 0) {
        for (const { spec, key } of limits) {
          const math = MATH[spec.algorithm];
          const entry = entries.get(key);
          const live = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
          const state = math.commit(spec, live, now, cost);
          const expiresAt = math.expiresAt(spec, state);
          if (entry === undefined) entries.set(key, { state, expiresAt });
          else {
            entry.state = state;
            entry.expiresAt = expiresAt;
          }
        }
      }
      return { now, allowed, verdicts };
    },
    reset(namespace) {
      let n = 0;
      for (const key of entries.keys()) {
        if (inNamespace(key, namespace)) {
          entries.delete(key);
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

/** True when `key` (`{<namespace>:...}...` or `{<namespace>}...`) belongs to `namespace`. */
export function inNamespace(key: string, namespace: string): boolean {
  const open = `{${namespace}`;
  if (!key.startsWith(open)) return false;
  const next = key.charCodeAt(open.length);
  return next === 58 /* : */ || next === 125 /* } */;
}
