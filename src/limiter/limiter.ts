import { type Clock, systemClock } from '../core/clock.js';
import type { Duration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { optionWithinLimit } from '../core/limits.js';
import { type Observer, observing } from '../core/observer.js';
import { pinShapes } from '../core/pin-shapes.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys, nonEmptyString, positiveInt } from '../core/validate.js';
import { MemoryLimiterBackend } from '../store/memory/limiter.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import { limiterTime, STATE_SLACK_MS } from '../windows/limits/time.js';
import { BlockCache } from './block-cache.js';
import { DeviationSampler } from './deviation.js';
import { limiterNamespace } from './keys.js';
import { type LimitOptions, toSpec } from './options.js';
import { type Fallback, type LimiterConfig, RateLimiter } from './rate-limiter.js';
import type { DegradedPolicy, Limiter } from './types.js';

export type { DegradedPolicy, Limiter } from './types.js';

/** Options of {@link createLimiter}: one limit inline, or several in `limits`. */
export interface LimiterOptions extends Partial<LimitOptions> {
  /** Where the counters live. Default: a new `memoryStore()`. */
  store?: Store;
  /** Keeps limiters on one store apart. Default `'default'`. */
  name?: string;
  /** Several limits decided together, all or nothing (instead of the inline one). */
  limits?: LimitOptions[];
  /**
   * `'store'` (default): the store's time (Redis `TIME`, the memory store's clock). `'client'`:
   * this process's wall clock, passed in. A {@link Clock}: that clock, passed in (tests drive
   * Redis and memory with one fake clock). The block cache and the local degraded limiter use
   * the given clock, or the wall clock.
   */
  clock?: 'store' | 'client' | Clock;
  /** Local block cache of refused keys: `{ max }` entries, or `false`. Default `{ max: 10_000 }`. */
  blockCache?: false | { max?: number };
  /** Default `'throw'`. */
  degraded?: DegradedPolicy;
  /**
   * How long to wait for a remote store before the degraded policy applies. Default `'100ms'`
   * when `degraded` is not `'throw'`; none otherwise (the store's own bound applies: a Redis
   * store answers within its `timeout`, 10 s by default).
   */
  timeout?: Duration;
  /**
   * Told every decision (`limiter.decision`, with its reason: `blocked` when the block cache
   * answered) and every store failure the degraded policy answered (`limiter.degraded`): see
   * docs/observability.md. A `sliding-window` limit's estimate is also measured on a sample of
   * keys (`limiter.deviation`, docs/limits.md). None by default: an unobserved limiter builds no
   * event.
   */
  observer?: Observer;
}

// 10 000 blocked keys x ~150 bytes (key string, entry, map slot) ≈ 1.5 MB per limiter: enough to
// absorb an abusive client population of that size; a forgotten block only costs a store call.
const DEFAULT_BLOCK_CACHE = 10_000;
// A healthy Redis in the same data centre answers a limiter script in well under 5 ms at p99.9
// (the batched script holds the server < 1 ms per batch: scripts/limiter-lua-ab.mjs); 20x that
// means the store is unwell, and a request should not wait longer than that for its rate limit.
const DEFAULT_TIMEOUT_MS = 100;

/**
 * Internal, for the tenant registry (createTenantRegistry): not part of the public API.
 * `namespace` replaces the key space the limiter's `name` would give (a tenant's own);
 * `onDegraded` is called with each store failure the degraded policy answers, raw (the tenant
 * registry's `degraded` event), at the moment the `limiter.degraded` event is emitted.
 */
export interface LimiterInternals {
  namespace?: string;
  onDegraded?: (error: unknown) => void;
}

// Also the order in which inline fields beside `limits` are checked: the first one set is named.
const LIMIT_OPTIONS = keysOf<LimitOptions>({
  algorithm: true,
  limit: true,
  window: true,
  granularity: true,
  burst: true,
  by: true,
  id: true,
  blockDuration: true,
});
const LIMITER_OPTIONS = [
  ...keysOf<Omit<LimiterOptions, keyof LimitOptions>>({
    store: true,
    name: true,
    limits: true,
    clock: true,
    blockCache: true,
    degraded: true,
    timeout: true,
    observer: true,
  }),
  ...LIMIT_OPTIONS,
];
const BLOCK_CACHE_OPTIONS = ['max'];
const DEGRADED_OPTIONS = ['mode', 'share'];

/**
 * Creates a rate limiter (DESIGN §3.5). Refusals are values (`allowed: false`) and charge
 * nothing; `retryAfterMs` is the exact wait.
 *
 * @example
 * ```ts
 * const clock = new FakeClock(0);
 * const limiter = createLimiter({ store: memoryStore({ clock }), clock, algorithm: 'sliding-log', limit: 10, window: '1s' });
 * (await limiter.take('user-1', { cost: 8 })).allowed; // true
 * const refused = await limiter.take('user-1', { cost: 5 });
 * [refused.allowed, refused.remaining, refused.reason, refused.retryAfterMs]; // [false, 2, 'limited', 1000]
 * clock.advance(1000);
 * (await limiter.take('user-1', { cost: 5 })).remaining; // 5
 * ```
 *
 * The second argument is internal (the tenant registry's, see {@link LimiterInternals}): leave it out.
 */
export function createLimiter(input: LimiterOptions, internals: LimiterInternals = {}): Limiter {
  pinLimiterShapes();
  return new RateLimiter(limiterConfig(input, internals));
}

/** Internal: keeps the shapes of the limiter's objects alive (see pinnedLimiters), once per process. */
export function pinLimiterShapes(): void {
  pinShapes(RateLimiter, pinnedLimiters);
}

/**
 * Internal: the validated configuration of a limiter (createLimiter's, and the local-first
 * limiter's, which allows `extraKeys` beside the limiter's own options and checks them itself).
 */
export function limiterConfig(
  input: LimiterOptions,
  internals: LimiterInternals,
  extraKeys: readonly string[] = [],
): LimiterConfig {
  if (!isPlainObject(input)) throw new InvalidOptionError('options', 'an object', input);
  knownKeys('', input, extraKeys.length === 0 ? LIMITER_OPTIONS : [...LIMITER_OPTIONS, ...extraKeys]);
  const options = input as LimiterOptions;
  const store = options.store ?? memoryStore();
  if (typeof store?.limiterTake !== 'function') {
    throw new InvalidOptionError(
      'store',
      'a store with limiter support (memoryStore(), createRedisStore())',
      store,
    );
  }
  if (options.limits !== undefined) {
    // Inline limit options beside `limits` would be ignored: refused by name.
    for (const field of LIMIT_OPTIONS) {
      if ((options as Record<string, unknown>)[field] !== undefined) {
        throw new InvalidOptionError(
          field,
          'absent when `limits` is given (set it in each limit)',
          (options as Record<string, unknown>)[field],
        );
      }
    }
  }
  const rawLimits =
    options.limits !== undefined
      ? options.limits
      : options.algorithm !== undefined
        ? [options as LimitOptions]
        : [];
  if (!Array.isArray(rawLimits) || rawLimits.length === 0) {
    throw new InvalidOptionError(
      'limits',
      'a non-empty array of limits, or algorithm/limit/window inline',
      options.limits,
    );
  }
  // Frozen: `limiter.limits` hands them out, and a caller's change must not change decisions.
  const specs = rawLimits.map((l, i) => {
    // Inline, the limit's keys are the limiter's own, checked above.
    if (options.limits !== undefined && isPlainObject(l)) knownKeys(`limits[${i}]`, l, LIMIT_OPTIONS);
    return Object.freeze(toSpec(l, options.limits !== undefined ? `limits[${i}]` : ''));
  });
  const blocking = specs.findIndex((s) => (s.blockMs ?? 0) > 0);
  if (blocking >= 0 && typeof store.limiterAdjust !== 'function') {
    // A store without limiterAdjust may not keep blocks at all: the refusals would block nothing.
    throw new InvalidOptionError(
      options.limits !== undefined ? `limits[${blocking}].blockDuration` : 'blockDuration',
      'set only with a store that keeps blocks (limiterAdjust: memoryStore(), the Redis and PostgreSQL stores)',
      rawLimits[blocking]?.blockDuration,
    );
  }
  const ids = new Set<string>();
  for (const [i, s] of specs.entries()) {
    if (ids.has(s.id)) throw new InvalidOptionError(`limits[${i}].id`, 'unique within the limiter', s.id);
    ids.add(s.id);
  }
  const name =
    options.name === undefined
      ? 'default'
      : optionWithinLimit('name', nonEmptyString('name', options.name), 'nameBytes');
  const namespace = internals.namespace ?? limiterNamespace(name);
  const emit = observing(options.observer, 'observer');

  const clockOption = options.clock ?? 'store';
  let passIn: Clock | undefined;
  if (clockOption === 'client') passIn = systemClock;
  else if (clockOption !== 'store') {
    if (typeof (clockOption as Clock)?.now !== 'function') {
      throw new InvalidOptionError('clock', "'store', 'client' or an object with now()", clockOption);
    }
    passIn = checkedClock(clockOption as Clock);
  }
  const local: Clock = passIn ?? systemClock;

  const cacheOption = options.blockCache ?? {};
  let cache: BlockCache | undefined;
  if (cacheOption !== false) {
    if (!isPlainObject(cacheOption))
      throw new InvalidOptionError('blockCache', 'false or { max }', cacheOption);
    knownKeys('blockCache', cacheOption, BLOCK_CACHE_OPTIONS);
    const max = positiveInt('blockCache.max', cacheOption.max ?? DEFAULT_BLOCK_CACHE);
    // Made whatever the store: one that turns out to decide in this process (it answers takes
    // synchronously) on its own clock has the cache stand aside (see RateLimiter).
    cache = new BlockCache(max);
  }

  const policy: DegradedPolicy = options.degraded ?? 'throw';
  let fallback: Fallback | undefined;
  if (isPlainObject(policy)) knownKeys('degraded', policy, DEGRADED_OPTIONS);
  if (isPlainObject(policy) && policy.mode === 'local') {
    const share: unknown = policy.share;
    if (typeof share !== 'number' || !(share > 0 && share <= 1)) {
      throw new InvalidOptionError('degraded.share', 'a number in (0, 1], e.g. 1 / nodes', share);
    }
    fallback = {
      backend: new MemoryLimiterBackend(local, STATE_SLACK_MS),
      specs: specs.map((s, i) => {
        // A node's share is what it may admit alone; rounding it up to 1 would let the nodes
        // together exceed the limit, so a share below one request is refused here.
        const gcra = s.algorithm === 'gcra';
        const limit = Math.floor(s.limit * share);
        const param = gcra ? Math.floor(s.param * share) : s.param;
        if (limit < 1 || (gcra && param < 1)) {
          throw new InvalidOptionError(
            'degraded.share',
            `large enough that each node may admit at least 1 of limits[${i}] (limit ${s.limit}${gcra ? `, burst ${s.param}` : ''})`,
            share,
          );
        }
        return { ...s, limit, param };
      }),
    };
  } else if (policy !== 'throw' && policy !== 'deny' && policy !== 'allow') {
    throw new InvalidOptionError('degraded', "'throw', 'deny', 'allow' or { mode: 'local', share }", policy);
  }
  // No timer with the 'throw' policy (a timeout would only turn a slow answer into an error: the
  // store's own bound, createRedisStore's `timeout`, does that already), and none ever armed for
  // an answer given synchronously (a store deciding in this process: the memory store). A
  // `timeout` given explicitly holds for any answer that is a promise (a wrapped memory store can
  // hang too). Parsed whatever the store, so a bad value is an error everywhere, not only on Redis.
  const timeoutOption = options.timeout !== undefined ? timerDuration('timeout', options.timeout) : undefined;
  const timeoutMs = timeoutOption ?? (policy === 'throw' ? 0 : DEFAULT_TIMEOUT_MS);
  return {
    store,
    specs,
    namespace,
    passIn,
    local,
    cache,
    policy,
    fallback,
    timeoutMs,
    onDegraded: internals.onDegraded,
    name,
    emit,
    deviation: DeviationSampler.for(specs, name, emit),
  };
}

/**
 * A caller's clock whose readings are checked and whole: a number of milliseconds in [0, 2^52)
 * (else a typed error; see time.ts), floored (limits work in whole milliseconds, as Redis's TTLs do:
 * a fractional time would give `SET PX` a fractional TTL, and memory and Redis would round apart).
 */
function checkedClock(clock: Clock): Clock {
  return {
    now: () => limiterTime(clock.now(), 'clock.now()'),
  };
}

// The shapes of a limiter's objects (its specs, per-key calls and states, verdicts, decisions)
// live only as long as some object has them: a program that drops its last limiter (a tenant
// closed, a test, a bench run) lets a full GC free them, and every optimized function that
// embedded them ("weak objects") falls back to the interpreter. One limiter per algorithm, each
// taken through its allowed, refused and never-passes paths (with and without the block cache),
// is made with the first limiter and kept by the class from then on (see pinShapes).
function pinnedLimiters(): unknown[] {
  const kept: unknown[] = [];
  for (const algorithm of ['gcra', 'fixed-window', 'sliding-window', 'sliding-log'] as const) {
    for (const blockCache of [false, undefined]) {
      const limiter = createLimiter({
        algorithm,
        limit: 2,
        window: 1000,
        ...(blockCache === false ? { blockCache } : {}),
        ...(algorithm === 'sliding-window' ? { granularity: 100 } : {}),
      });
      kept.push(limiter);
      // A warm-up must never fail the host (a mocked Date.now at import): errors are dropped.
      for (const cost of [1, 1, 1, 1, 5, 0])
        kept.push(limiter.take('pinned', { cost }).catch(() => undefined));
    }
  }
  return kept;
}
