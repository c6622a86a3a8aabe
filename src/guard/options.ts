import { type Clock, systemClock } from '../core/clock.js';
import { type Duration, parseDuration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { optionWithinLimit } from '../core/limits.js';
import { type Emit, type Observer, observing } from '../core/observer.js';
import { timerDelay, timerDuration } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys, nonEmptyString, positiveInt } from '../core/validate.js';
import type { BloomFilterOptions } from '../windows/bloom-filter.js';
import type { LookupGuardState, LookupGuardStats } from './types.js';

/** Options of {@link createLookupGuard}. */
export interface LookupGuardOptions<V> {
  /** The lookup it guards: a value, or `null`/`undefined` for "no such key". */
  lookup: (key: string) => Promise<V | null | undefined>;
  /** The sliding window the ratios are counted over (>= 10 ms). Default `'60s'`. */
  window?: Duration;
  /** Degrade when more than this share of the window's answers were null, in (0, 1]. Default 0.8. */
  nullRatio?: number;
  /** Degrade when the window's backend p99 is above this (more than 1% of calls slower). Default `'1s'`. */
  p99?: Duration;
  /** Answers (and, for the p99 rule, backend calls) a window needs before it can degrade. Default 100. */
  minSamples?: number;
  /**
   * How long a lookup is waited for: past it, every get waiting on it rejects (`ERR_STORE`,
   * operation `lookup`), the call counts as one slower than `p99`, and the next get looks up
   * again. Default 10 x `p99` (10 s). The lookup itself is not cancelled.
   */
  timeout?: Duration;
  /** How long a null answer is reused in degraded mode (> 0). Default `'5s'`. */
  nullTtl?: Duration;
  /** Most null answers held (least recently used go first), at most 1,000,000. Default 10,000. */
  maxNullKeys?: number;
  /**
   * A Bloom filter of the keys that exist, answering "definitely absent" in degraded mode. Give
   * it only if every existing key reaches it: through {@link LookupGuard.add} (or
   * `rebuildKnown`) or a non-null lookup. Without it, degraded mode uses the null cache alone.
   */
  known?: BloomFilterOptions;
  /** Default `systemClock`. */
  clock?: Clock;
  /** Told each change of state, with the stats that caused it. A throw is reported once as a warning. */
  onStateChange?: (state: LookupGuardState, stats: LookupGuardStats) => void;
  /** Names the guard in its events (a metric label: a configured name). Default `'default'`. */
  name?: string;
  /** Told every get's outcome and every change of state (`guard.get`, `guard.state`: docs/observability.md). */
  observer?: Observer;
}

const OPTIONS = keysOf<LookupGuardOptions<unknown>>({
  lookup: true,
  window: true,
  nullRatio: true,
  p99: true,
  minSamples: true,
  timeout: true,
  nullTtl: true,
  maxNullKeys: true,
  known: true,
  clock: true,
  onStateChange: true,
  name: true,
  observer: true,
});

// 60 s: seed 001 §3.3 counts the null share of "the last 60 s"; a minute holds enough traffic for
// a ratio to mean something and lets a flood be seen (and its end confirmed) within a minute.
const DEFAULT_WINDOW = '60s';
// 80%: seed 001 §3.3's trigger. A healthy read path answers mostly hits (a null share of a few
// percent to a few tens); four lookups in five for keys that do not exist is a penetration
// pattern (scanned or forged ids), not a user population.
const DEFAULT_NULL_RATIO = 0.8;
// 1 s: seed 001 §3.3's "DB P99 > 1s", its overload signal: a database whose slowest 1% take a
// second is queueing, and every lookup the guard spares it shortens the queue.
const DEFAULT_P99 = '1s';
// 100: below it a ratio rests on too few answers (4 nulls of 5 is 80%), and the p99 of fewer than
// 100 calls is the single slowest one.
const DEFAULT_MIN_SAMPLES = 100;
// 10 x p99: a lookup that slow is far past the overload signal (it counts as slow either way), and
// a healthy backend never comes near it; with the 1 s default, 10 s, a common HTTP client bound.
const DEFAULT_TIMEOUT_P99S = 10;
// 5 s: seed 001 §3.3's table ("返回空对象缓存 | 5s"): long enough to absorb a flood's repeats of one
// key, short enough that a key created without `add` is seen within seconds.
const DEFAULT_NULL_TTL = '5s';
// 10,000 keys at an estimated ~150 bytes each (a short key, an LRU node, a Map entry) is ~1.5 MB. It holds
// the repeats of 5 s (nullTtl) of a 2,000 lookups/s flood; a wider flood of random keys is the
// filter's work, not this cache's.
const DEFAULT_MAX_NULL_KEYS = 10_000;
// 1,000,000 null keys is ~150 MB by the same estimate: past that the cache is a memory risk of its own.
const MAX_NULL_KEYS = 1_000_000;
// 10 slots of at least 1 ms each.
const MIN_WINDOW_MS = 10;

/** The options read once, in the factory. */
export interface ResolvedOptions<V> {
  readonly lookup: (key: string) => Promise<V | null | undefined>;
  readonly windowMs: number;
  readonly nullRatio: number;
  readonly p99Ms: number;
  readonly timeoutMs: number;
  readonly minSamples: number;
  readonly nullTtlMs: number;
  readonly maxNullKeys: number;
  readonly known: BloomFilterOptions | undefined;
  readonly clock: Clock;
  readonly onStateChange: ((state: LookupGuardState, stats: LookupGuardStats) => void) | undefined;
  readonly name: string;
  readonly emit: Emit | undefined;
}

/** Validates and fills in the defaults; throws `ERR_INVALID_OPTION` naming the first bad option. */
export function resolveOptions<V>(options: LookupGuardOptions<V>): ResolvedOptions<V> {
  if (!isPlainObject(options as unknown)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, OPTIONS);
  if (typeof options.lookup !== 'function') {
    throw new InvalidOptionError('lookup', 'a function (key) => Promise<value | null>', options.lookup);
  }
  const windowMs = parseDuration(options.window ?? DEFAULT_WINDOW, 'window');
  if (windowMs < MIN_WINDOW_MS) {
    throw new InvalidOptionError('window', `at least ${MIN_WINDOW_MS} ms`, options.window);
  }
  const nullRatio = options.nullRatio ?? DEFAULT_NULL_RATIO;
  if (typeof nullRatio !== 'number' || !(nullRatio > 0 && nullRatio <= 1)) {
    throw new InvalidOptionError('nullRatio', 'a number in (0, 1]', options.nullRatio);
  }
  const p99Ms = parseDuration(options.p99 ?? DEFAULT_P99, 'p99');
  if (p99Ms <= 0) throw new InvalidOptionError('p99', 'a duration above 0', options.p99);
  const timeoutMs =
    options.timeout === undefined
      ? timerDelay(DEFAULT_TIMEOUT_P99S * p99Ms)
      : timerDuration('timeout', options.timeout);
  if (timeoutMs <= 0) throw new InvalidOptionError('timeout', 'a duration above 0', options.timeout);
  const nullTtlMs = parseDuration(options.nullTtl ?? DEFAULT_NULL_TTL, 'nullTtl');
  if (nullTtlMs <= 0) throw new InvalidOptionError('nullTtl', 'a duration above 0', options.nullTtl);
  const maxNullKeys = positiveInt('maxNullKeys', options.maxNullKeys ?? DEFAULT_MAX_NULL_KEYS);
  if (maxNullKeys > MAX_NULL_KEYS) {
    throw new InvalidOptionError('maxNullKeys', `at most ${MAX_NULL_KEYS}`, options.maxNullKeys);
  }
  const clock = options.clock ?? systemClock;
  if (typeof (clock as Partial<Clock> | null)?.now !== 'function') {
    throw new InvalidOptionError('clock', 'an object with a now() method', options.clock);
  }
  if (options.onStateChange !== undefined && typeof options.onStateChange !== 'function') {
    throw new InvalidOptionError('onStateChange', 'a function (state, stats) => void', options.onStateChange);
  }
  return {
    lookup: options.lookup,
    windowMs,
    nullRatio,
    p99Ms,
    timeoutMs,
    minSamples: positiveInt('minSamples', options.minSamples ?? DEFAULT_MIN_SAMPLES),
    nullTtlMs,
    maxNullKeys,
    known: options.known,
    clock,
    onStateChange: options.onStateChange,
    name:
      options.name === undefined
        ? 'default'
        : optionWithinLimit('name', nonEmptyString('name', options.name), 'nameBytes'),
    emit: observing(options.observer, 'observer'),
  };
}
