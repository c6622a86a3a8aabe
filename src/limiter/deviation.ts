// The sampled consistency deviation of the bucketed `sliding-window` estimate: for a few keys, an
// exact log of what this limiter admitted, set against the store's estimate after each admission
// (the `limiter.deviation` event; docs/limits.md "Measuring the estimate's deviation").

import { fmix32, fnv1a } from '../core/hash.js';
import type { Emit } from '../core/observer.js';
import type { LimitCall } from '../store/limiter.js';
import type { Decision } from '../windows/limits/decision.js';
import type { LimitSpec } from '../windows/limits/types.js';

// 1 key in 2^6 = 64 is sampled: the top 6 bits of its 32-bit hash (FNV-1a, finalised) are zero,
// 32 - 6 = 26. Enough sampled keys for a distribution on any busy limiter (a thousand active keys give
// ~16), few enough that an observed limiter's takes pay the hash and little else.
const SAMPLE_SHIFT = 26;
// Tracked keys per limiter, over all its sliding-window limits. Each holds at most MAX_ENTRIES
// entries of ~16 bytes (a time and a cost in packed number arrays): 256 x 4,096 x 16 B ≈ 16 MB in
// the worst case (256 sampled keys, each with limit >= 2,048 and admitting it every window), and
// ~256 x 2 x limit x 16 B under any smaller limit. 256 sampled keys is ~16,000 active keys' worth.
export const MAX_KEYS = 256;
// Entries of one key's log. The cost a sliding window admits in any window is below 2 x limit
// (docs/limits.md: limit + b, b <= limit the oldest bucket's cost) and every logged entry costs at
// least 1, so a limit of up to MAX_ENTRIES / 2 never fills its log; a larger limit is not sampled.
// Same-millisecond admissions share an entry, so a log holds at most windowMs entries too.
export const MAX_ENTRIES = 4096;

/** One sampled key's admissions still in the window, oldest first, from `head` on. */
interface KeyLog {
  times: number[];
  costs: number[];
  head: number;
  /** The cost of the entries from `head` on. */
  total: number;
  /**
   * The log holds every admission after this time: -Infinity when the store's window was empty as
   * tracking began, else the time tracking began (earlier admissions, made while the key was not
   * tracked, are unknown). A window that reaches back to it or before is not reported.
   */
  from: number;
}

/**
 * Measures how far a `sliding-window` limit's estimate is from the exact admitted cost, on a
 * deterministic sample of keys (see {@link DeviationSampler.for}). After each take the store
 * admitted, for every sampled sliding-window limit of the take, it logs the admission, drops what
 * left the window (now − window, now] on the store's clock (the reply's `now`), and emits
 * `limiter.deviation` with the estimate (`limit − remaining`) and the logged sum. A pure class:
 * no clock, no timer; its memory is bounded by MAX_KEYS x MAX_ENTRIES.
 *
 * @example
 * ```ts
 * const clock = new FakeClock(0);
 * const seen: OnceflowEvent[] = [];
 * const limiter = createLimiter({
 *   store: memoryStore({ clock }), clock, algorithm: 'sliding-window', limit: 10, window: '1s', id: 'w',
 *   observer: (e) => { if (e.type === 'deviation') seen.push(e); },
 * });
 * clock.set(900);
 * await limiter.take('user-62', { cost: 8 }); // 'user-62' is in the sample
 * clock.set(1800);
 * await limiter.take('user-62');
 * // The 8 at 900 is in (800, 1800] in full, the estimate weighs it by 200 / 1000.
 * seen.at(-1); // { part: 'limiter', type: 'deviation', limiter: 'default', limit: 'w', max: 10, estimate: 3, exact: 9 }
 * ```
 */
export class DeviationSampler {
  readonly #name: string;
  readonly #emit: Emit;
  readonly #specs: readonly LimitSpec[];
  /** The indexes (in the limiter's specs) of the limits sampled. */
  readonly #indexes: number[];
  /** Per spec index, the tracked subjects' logs, least recently admitted first. */
  readonly #logs: (Map<string, KeyLog> | undefined)[];
  #tracked = 0;

  private constructor(specs: readonly LimitSpec[], indexes: number[], name: string, emit: Emit) {
    this.#specs = specs;
    this.#indexes = indexes;
    this.#name = name;
    this.#emit = emit;
    this.#logs = specs.map((_, i) => (indexes.includes(i) ? new Map<string, KeyLog>() : undefined));
  }

  /**
   * The sampler of a limiter: undefined when it has no observer or no sliding-window limit it can
   * measure (one with `limit` of at most MAX_ENTRIES / 2), so an unobserved limiter builds nothing.
   */
  static for(
    specs: readonly LimitSpec[],
    name: string,
    emit: Emit | undefined,
  ): DeviationSampler | undefined {
    if (emit === undefined) return undefined;
    const indexes: number[] = [];
    specs.forEach((s, i) => {
      if (s.algorithm === 'sliding-window' && s.limit * 2 <= MAX_ENTRIES) indexes.push(i);
    });
    return indexes.length === 0 ? undefined : new DeviationSampler(specs, indexes, name, emit);
  }

  /** Whether a subject is in the sample (1 in 64, the same answer for a subject every time). */
  sampled(subject: string): boolean {
    return hash(subject) >>> SAMPLE_SHIFT === 0;
  }

  /** Keys tracked now, over all limits (at most MAX_KEYS). */
  get size(): number {
    return this.#tracked;
  }

  /**
   * After a take: logs and reports an admission the store decided (`reason` 'allowed'); any other
   * decision (refused, blocked, degraded) is ignored. `calls` are the take's, in spec order.
   */
  admitted(calls: readonly LimitCall[], cost: number, decision: Decision): void {
    if (decision.reason !== 'allowed') return;
    const indexes = this.#indexes;
    let hashed = '';
    let inSample = false;
    for (let k = 0; k < indexes.length; k++) {
      const i = indexes[k] as number;
      const subject = (calls[i] as LimitCall).subject;
      if (subject !== hashed) {
        hashed = subject;
        inSample = this.sampled(subject);
      }
      if (!inSample) continue;
      const part = decision.limits[i];
      if (part !== undefined) this.#record(i, subject, cost, decision.at, part.remaining);
    }
  }

  /** Forgets the logs of a reset key: `calls` name its subject per limit, in spec order. */
  forget(calls: readonly LimitCall[]): void {
    for (const i of this.#indexes) {
      const subject = calls[i]?.subject;
      if (subject !== undefined && (this.#logs[i] as Map<string, KeyLog>).delete(subject)) this.#tracked--;
    }
  }

  #record(i: number, subject: string, cost: number, now: number, remaining: number): void {
    const spec = this.#specs[i] as LimitSpec;
    const logs = this.#logs[i] as Map<string, KeyLog>;
    const estimate = spec.limit - remaining;
    let log = logs.get(subject);
    if (log === undefined) {
      // A read (cost 0) of an untracked key has nothing to log.
      if (cost === 0 || !this.#room(now)) return;
      // The estimate after this take is ceil(earlier estimate) + cost: it equals the cost exactly
      // when the store's buckets held nothing in the window, so no earlier admission is missing.
      log = {
        times: [],
        costs: [],
        head: 0,
        total: 0,
        from: estimate === cost ? Number.NEGATIVE_INFINITY : now,
      };
      this.#tracked++;
    } else {
      logs.delete(subject); // re-inserted below: the map stays in order of last admission
    }
    // The log's timeline never moves back (a clock stepping back logs at its newest entry).
    const last = log.times.length - 1;
    const at = last >= log.head && (log.times[last] as number) > now ? (log.times[last] as number) : now;
    prune(log, at - spec.windowMs);
    const times = log.times; // after prune, which may have replaced the arrays
    if (cost > 0) {
      if (times.length > log.head && times[times.length - 1] === at) {
        log.costs[log.costs.length - 1] = (log.costs[log.costs.length - 1] as number) + cost;
      } else {
        times.push(at);
        log.costs.push(cost);
      }
      log.total += cost;
    }
    if (times.length - log.head > MAX_ENTRIES) {
      // Only a store admitting past its documented bound gets here: stop measuring the key.
      this.#tracked--;
      return;
    }
    if (log.total > 0) logs.set(subject, log);
    else this.#tracked--; // emptied past the window: dropped, the event below still reports it
    if (at - spec.windowMs >= log.from) {
      this.#emit({
        part: 'limiter',
        type: 'deviation',
        limiter: this.#name,
        limit: spec.id,
        max: spec.limit,
        estimate,
        exact: log.total,
      });
    }
  }

  // Room for one more key: the least recently admitted key of a limit whose newest entry left the
  // window is dropped for it. Keys are in order of last admission, so one stale front is checked
  // per limit, and a limit's first fresh key ends its search.
  #room(now: number): boolean {
    if (this.#tracked < MAX_KEYS) return true;
    for (const i of this.#indexes) {
      const logs = this.#logs[i] as Map<string, KeyLog>;
      const windowMs = (this.#specs[i] as LimitSpec).windowMs;
      for (const [subject, log] of logs) {
        if ((log.times[log.times.length - 1] as number) > now - windowMs) break;
        logs.delete(subject);
        this.#tracked--;
        return true;
      }
    }
    return false;
  }
}

/** Drops the entries at or before `cutoff`: an entry at t counts while t > now − window. */
function prune(log: KeyLog, cutoff: number): void {
  const { times, costs } = log;
  while (log.head < times.length && (times[log.head] as number) <= cutoff) {
    log.total -= costs[log.head] as number;
    log.head++;
  }
  if (log.head > 32 && log.head * 2 >= times.length) {
    // Drop the dead prefix once it is as long as the live part: amortised O(1), memory <= 2x.
    log.times = times.slice(log.head);
    log.costs = costs.slice(log.head);
    log.head = 0;
  }
}

/**
 * 32-bit FNV-1a over the UTF-16 code units, then murmur3's finaliser: FNV alone changes its top
 * bits only a little for keys that differ in their last character ('user-30', 'user-31', ...
 * would be sampled together), and the finaliser spreads every input bit over the result.
 */
function hash(s: string): number {
  return fmix32(fnv1a(s));
}
