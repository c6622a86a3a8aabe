import { wholeMs } from '../core/clock.js';
import { InvalidArgumentError, InvalidOptionError, StoreError } from '../core/errors.js';
import { LruMap } from '../core/lru-map.js';
import { messageOf, warn } from '../core/observer.js';
import { BloomFilter, type BloomFilterOptions, MAX_BLOOM_KEY_LENGTH } from '../windows/bloom-filter.js';
import { LookupWindow } from '../windows/lookup-window.js';
import { type LookupGuardOptions, type ResolvedOptions, resolveOptions } from './options.js';
import type { LookupGuardState, LookupGuardStats } from './types.js';

/** A guarded lookup: see {@link createLookupGuard}. */
export interface LookupGuard<V> {
  /**
   * The value under `key`, or `null`. Normal mode: the lookup answers (concurrent gets of one key
   * share one call). Degraded mode: `null` without the lookup when the filter has never seen the
   * key or a null answer for it is younger than `nullTtl`; otherwise the lookup answers.
   * A failed lookup rejects with its error.
   */
  get(key: string): Promise<V | null>;
  /**
   * Tells the guard `key` now exists (call it where the record is created): the filter learns it,
   * a cached null for it is dropped, and a lookup of it already in flight is not reused.
   */
  add(key: string): void;
  /**
   * Replaces the filter with a fresh one holding exactly `keys` (the way to forget deleted keys:
   * a Bloom filter cannot). Built aside and swapped in one synchronous step, so no get ever sees a
   * half-filled filter; a bad key throws before anything changes. No-op without `known`.
   */
  rebuildKnown(keys: Iterable<string>): void;
  /** The state now (read at the clock's current time: a guard recovers without traffic). */
  readonly state: LookupGuardState;
  /** The counts of the window ending now, and what the guard holds. */
  stats(): LookupGuardStats;
}

// "p99 above T" is "more than 1% of calls above T".
const P99_TAIL = 0.01;

interface Flight<V> {
  readonly promise: Promise<V | null>;
}

/**
 * Puts a penetration guard in front of an async lookup by key (a database read, a cache fill).
 * It counts, over a sliding `window`, the share of null answers and of backend calls slower than
 * `p99`; when a window with at least `minSamples` answers has more than `nullRatio` nulls or a
 * p99 above `p99`, it degrades: a key the `known` filter has never seen answers `null` without
 * the backend, and a null answer is reused for `nullTtl`. It returns to normal once a whole
 * window has passed with neither. It never answers `null` for a key it was told exists (by `add`,
 * `rebuildKnown` or a non-null answer) unless the lookup itself said so. See docs/guard.md.
 *
 * @example
 * ```ts
 * const users = new Map([['u1', { name: 'Ada' }]]);
 * const guard = createLookupGuard({
 *   lookup: async (id: string) => users.get(id) ?? null,
 *   known: { expected: 100_000, falsePositiveRate: 0.01 },
 * });
 * guard.add('u1'); // at start-up: every existing id
 * await guard.get('u1'); // { name: 'Ada' }
 * guard.state; // 'normal'
 * ```
 */
export function createLookupGuard<V>(options: LookupGuardOptions<V>): LookupGuard<V> {
  const o = resolveOptions(options);
  const filter = o.known === undefined ? undefined : knownFilter(o.known);
  return new Guard(o, filter);
}

class Guard<V> implements LookupGuard<V> {
  readonly #o: ResolvedOptions<V>;
  #filter: BloomFilter | undefined;
  readonly #window: LookupWindow;
  // key -> when its null answer expires (clock ms).
  readonly #nulls: LruMap<string, number>;
  // The lookups in flight, one per key: concurrent gets share it (a hot key that expires in the
  // cache above makes one backend call, not one per waiting request).
  readonly #inflight = new Map<string, Flight<V>>();
  #state: LookupGuardState = 'normal';
  // The last time the window showed trouble: recovery waits a whole window after it.
  #troubleAt = 0;
  #backendCalls = 0;
  #absentByFilter = 0;
  #absentByNullCache = 0;
  #warned = false;

  constructor(o: ResolvedOptions<V>, filter: BloomFilter | undefined) {
    this.#o = o;
    this.#filter = filter;
    this.#window = new LookupWindow(o.windowMs, o.p99Ms);
    this.#nulls = new LruMap(o.maxNullKeys);
  }

  get state(): LookupGuardState {
    this.#evaluate(this.#now());
    return this.#state;
  }

  async get(key: string): Promise<V | null> {
    checkKey(key);
    const now = this.#now();
    this.#evaluate(now);
    if (this.#state === 'degraded') {
      if (this.#filter !== undefined && !this.#filter.mightContain(key)) {
        this.#absentByFilter++;
        this.#emitGet('absent-filter');
        this.#window.answer(now, true);
        return null;
      }
      const expires = this.#nulls.get(key);
      if (expires !== undefined) {
        if (expires > now) {
          this.#absentByNullCache++;
          this.#emitGet('absent-null-cache');
          this.#window.answer(now, true);
          return null;
        }
        this.#nulls.delete(key);
      }
    }
    const joined = this.#inflight.get(key);
    const flight = joined ?? this.#start(key, now);
    this.#emitGet(joined === undefined ? 'backend' : 'joined');
    const value = await flight.promise;
    const end = this.#now();
    this.#window.answer(end, value === null);
    this.#evaluate(end);
    return value;
  }

  add(key: string): void {
    checkKey(key);
    this.#filter?.add(key);
    this.#nulls.delete(key);
    // A lookup that started before the key existed may still answer null: later gets must not
    // join it, and its null must not be cached (#start checks that it is still the key's flight).
    this.#inflight.delete(key);
  }

  rebuildKnown(keys: Iterable<string>): void {
    const current = this.#filter;
    if (current === undefined) return;
    const fresh = new BloomFilter({
      expected: current.expected,
      falsePositiveRate: current.targetFalsePositiveRate,
    });
    for (const key of keys) fresh.add(checkKey(key));
    this.#filter = fresh;
  }

  stats(): LookupGuardStats {
    const now = this.#now();
    this.#evaluate(now);
    return this.#stats(now);
  }

  #start(key: string, startedAt: number): Flight<V> {
    this.#backendCalls++;
    // In the map before the lookup runs: a lookup that throws at once still finds (and removes)
    // its own entry.
    const flight = {} as { promise: Promise<V | null> };
    this.#inflight.set(key, flight);
    flight.promise = this.#run(key, flight, startedAt);
    return flight;
  }

  async #run(key: string, flight: Flight<V>, startedAt: number): Promise<V | null> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let late = false;
    try {
      // A lookup that never answers must not hold its gets (nor the p99 rule) forever.
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          late = true;
          reject(
            new StoreError('lookup', `no answer for ${key.slice(0, 64)} within ${this.#o.timeoutMs} ms`),
          );
        }, this.#o.timeoutMs);
      });
      const found = await Promise.race([this.#o.lookup(key), timedOut]);
      const value = found === undefined ? null : found;
      if (value !== null) {
        this.#filter?.add(key);
        this.#nulls.delete(key);
      } else if (this.#inflight.get(key) === flight) {
        // Not when `add` detached this flight: the key was created while the lookup ran.
        this.#nulls.set(key, this.#now() + this.#o.nullTtlMs);
      }
      return value;
    } finally {
      clearTimeout(timer);
      const end = this.#now();
      // A failed call counts for latency too: a backend that times out is the slowest of all (at
      // least the timeout, whatever the guard's clock says).
      this.#window.backend(end, Math.max(0, end - startedAt, late ? this.#o.timeoutMs : 0));
      if (this.#inflight.get(key) === flight) this.#inflight.delete(key);
    }
  }

  #emitGet(outcome: 'backend' | 'joined' | 'absent-filter' | 'absent-null-cache'): void {
    const emit = this.#o.emit;
    if (emit !== undefined) emit({ part: 'guard', type: 'get', guard: this.#o.name, outcome });
  }

  #evaluate(now: number): void {
    const t = this.#window.totals(now);
    const o = this.#o;
    const trouble =
      (t.answers >= o.minSamples && t.nulls / t.answers > o.nullRatio) ||
      (t.calls >= o.minSamples && t.slow / t.calls > P99_TAIL);
    if (trouble) this.#troubleAt = now;
    const next: LookupGuardState =
      trouble || (this.#state === 'degraded' && now - this.#troubleAt < o.windowMs) ? 'degraded' : 'normal';
    if (next === this.#state) return;
    this.#state = next;
    const emit = o.emit;
    if (emit !== undefined) {
      emit({
        part: 'guard',
        type: 'state',
        guard: o.name,
        state: next,
        nullRatio: t.answers === 0 ? 0 : t.nulls / t.answers,
        slowRatio: t.calls === 0 ? 0 : t.slow / t.calls,
      });
    }
    if (o.onStateChange === undefined) return;
    try {
      o.onStateChange(next, this.#stats(now));
    } catch (err) {
      this.#warn(err);
    }
  }

  #stats(now: number): LookupGuardStats {
    const t = this.#window.totals(now);
    const f = this.#filter;
    return {
      state: this.#state,
      answers: t.answers,
      nulls: t.nulls,
      nullRatio: t.answers === 0 ? 0 : t.nulls / t.answers,
      calls: t.calls,
      slowRatio: t.calls === 0 ? 0 : t.slow / t.calls,
      backendCalls: this.#backendCalls,
      absentByFilter: this.#absentByFilter,
      absentByNullCache: this.#absentByNullCache,
      cachedNulls: this.#nulls.size,
      known:
        f === undefined
          ? null
          : {
              size: f.size,
              bytes: f.bytes,
              hashes: f.hashes,
              estimatedFalsePositiveRate: f.estimatedFalsePositiveRate(),
            },
    };
  }

  #now(): number {
    return wholeMs(this.#o.clock.now(), 'clock.now()');
  }

  // A callback that throws must not fail the get that changed the state; it is reported once.
  #warn(err: unknown): void {
    if (this.#warned) return;
    this.#warned = true;
    warn(
      `an onceflow lookup guard's onStateChange threw (reported once): ${messageOf(err)}`,
      'ONCEFLOW_CALLBACK_THREW',
    );
  }
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_BLOOM_KEY_LENGTH) {
    throw new InvalidArgumentError(
      'key',
      `a non-empty string of at most ${MAX_BLOOM_KEY_LENGTH} UTF-16 units`,
      key,
    );
  }
  return key;
}

/** The guard's filter of known keys: a bad `known` is refused naming the guard's option. */
function knownFilter(known: BloomFilterOptions): BloomFilter {
  if (known === null || typeof known !== 'object')
    throw new InvalidOptionError('known', 'an object like { expected }', known);
  try {
    return new BloomFilter(known);
  } catch (err) {
    if (!(err instanceof InvalidOptionError)) throw err;
    throw new InvalidOptionError(`known.${err.option}`, err.expected, err.got);
  }
}
