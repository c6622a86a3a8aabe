// A store for @fastify/rate-limit on onceflow's store contract: the memory store in one process,
// the Redis store across processes (exact: every hit is one atomic step of the store).
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Clock } from '../core/clock.js';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { LIMITS, utf8Bytes } from '../core/limits.js';
import { isPlainObject, keysOf, knownKeys, nonEmptyString } from '../core/validate.js';
import type { LimitCall } from '../store/limiter.js';
import type { Store } from '../store/store.js';
import { hitCounterSpec } from '../windows/limits/spec.js';
import type { LimitSpec } from '../windows/limits/types.js';

/** Options of {@link rateLimitStore}. */
export interface RateLimitStoreOptions {
  /** A store with limiter operations: `memoryStore()` or `createRedisStore({ client })`. */
  store: Store;
  /**
   * The key space on the store (a limiter's namespace). Default `'fastify-rate-limit'`. At most
   * `LIMITS.nameBytes` (256) UTF-8 bytes with a route's method and URL added, which a route's
   * own store (`child`) does.
   */
  name?: string;
  /**
   * The time of each hit: default the store's own (Redis `TIME`: one clock for every process).
   * A `FakeClock` drives window edges in tests.
   */
  clock?: Clock;
}

const OPTIONS = keysOf<RateLimitStoreOptions>({ store: true, name: true, clock: true });

/** @fastify/rate-limit's store, with the read it uses for `createRateLimit(...)(req, { increment: false })`. */
export interface OnceflowRateLimitStore extends FastifyRateLimitStore {
  read(key: string, callback: IncrCallback, timeWindow: number, max?: number): void;
}
type IncrCallback = (error: Error | null, result?: { current: number; ttl: number }) => void;

// The counter is a fixed-window limit that never refuses: its limit is the largest the math
// keeps exact for the window (limit x windowMs < 2^53; for a 1-minute window, 1.5 x 10^11 hits),
// so `current` = limit - remaining counts every hit, over `max` included, as @fastify/rate-limit
// expects (it compares `current` with `max` itself).
const HIT_COUNTER_ID = 'hits';

/**
 * A store for `@fastify/rate-limit` (v11) on an onceflow store: pass the returned class as its
 * `store` option (the plugin constructs it). Each hit is one `limiterTake` of cost 1 on a
 * fixed-window counter that never refuses, so every process sharing one Redis counts the same
 * hits, exactly; `current` is the window's count, `ttl` the time to the window's end.
 *
 * Where it differs from the plugin's LocalStore and RedisStore: windows are aligned on
 * multiples of `timeWindow` (as onceflow's fixed window is), not started by a key's first hit,
 * so a first hit may see a `ttl` under `timeWindow`; `continueExceeding` and
 * `exponentialBackoff` are refused (a window that moves with each hit is not a fixed window).
 * Each route with its own `config.rateLimit` counts apart (`child`), as the plugin's stores do,
 * and so does each limiter made with `createRateLimit(options)` or `fastify.rateLimit(options)`
 * (numbered in the order they are made: make them in one order in every process).
 *
 * @example
 * ```ts no-run
 * const client = new Redis();
 * client.on('error', (err) => console.error('redis', err)); // else an outage crashes the process
 * const app = Fastify();
 * await app.register(fastifyRateLimit, {
 *   max: 100,
 *   timeWindow: '1 minute',
 *   store: rateLimitStore({ store: createRedisStore({ client, prefix: 'myapp:' }), name: 'api' }),
 * });
 * ```
 */
export function rateLimitStore(options: RateLimitStoreOptions): FastifyRateLimitStoreCtor {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { store }', options);
  knownKeys('', options, OPTIONS);
  const store = options.store;
  const limiterTake = (store as Partial<Store> | undefined)?.limiterTake;
  if (typeof limiterTake !== 'function')
    throw new InvalidOptionError(
      'store',
      'a store with limiter operations (memoryStore(), createRedisStore())',
      store,
    );
  const name = options.name === undefined ? 'fastify-rate-limit' : nonEmptyString('name', options.name);
  checkName('name', name);
  const clock = options.clock;
  if (clock !== undefined && typeof (clock as Partial<Clock>).now !== 'function')
    throw new InvalidOptionError('clock', 'a Clock ({ now() })', clock);
  const take = limiterTake.bind(store);

  class OnceflowStore implements OnceflowRateLimitStore {
    readonly #namespace: string;
    // A call object per (subject, window) would be kept by the store; building one per hit keeps
    // nothing alive between hits, and a spec per window length is all there is to reuse.
    readonly #specs = new Map<number, LimitSpec>();
    // Children with no route (`createRateLimit()`, `fastify.rateLimit()`), numbered in the order
    // they are made: each counts apart, and every process making them in one order (the same
    // startup code) gives the same limiter the same number, so they share its counts on Redis.
    #limiters = 0;

    constructor(settings?: unknown, namespace = name) {
      refuseMovingWindows(settings, 'options');
      this.#namespace = namespace;
    }

    incr(key: string, callback: IncrCallback, timeWindow: number): void {
      this.#hit(key, callback, timeWindow, 1);
    }

    read(key: string, callback: IncrCallback, timeWindow: number): void {
      // A take of cost 0 reads the counter without charging it (and stores nothing when empty).
      this.#hit(key, callback, timeWindow, 0);
    }

    // The plugin passes its merged settings with the route as `routeInfo` (typed as the route);
    // a limiter of its own (`createRateLimit(options)`) comes with an empty one.
    child(routeOptions: object): OnceflowRateLimitStore {
      refuseMovingWindows(routeOptions, 'config.rateLimit');
      const info = (routeOptions as { routeInfo?: { method?: unknown; url?: unknown } }).routeInfo ?? {};
      const route =
        info.method === undefined && info.url === undefined
          ? `#${++this.#limiters}`
          : `${String(info.method ?? '')} ${String(info.url ?? '')}`;
      const namespace = `${this.#namespace}|${route}`;
      checkName('route', namespace);
      return new OnceflowStore(undefined, namespace);
    }

    #hit(key: string, callback: IncrCallback, timeWindow: number, cost: number): void {
      let spec: LimitSpec;
      let call: LimitCall;
      try {
        spec = this.#spec(timeWindow);
        if (typeof key !== 'string' || utf8Bytes(key) > LIMITS.keyBytes)
          throw new InvalidArgumentError('key', `a string of at most ${LIMITS.keyBytes} UTF-8 bytes`, key);
        call = { spec, subject: key };
      } catch (err) {
        callback(err as Error);
        return;
      }
      const now = clock?.now();
      Promise.resolve()
        .then(() => take({ namespace: this.#namespace, limits: [call], cost, now }))
        .then((reply) => {
          const verdict = reply.verdicts[0];
          if (verdict === undefined)
            throw new Error(
              `the store answered no verdict for limiter namespace ${this.#namespace}, key ${call.subject}`,
            );
          const current = spec.limit - verdict.remaining;
          // An empty counter reads as no window at all, as the plugin's stores answer.
          const ttl = current === 0 ? 0 : Math.max(0, verdict.resetAt - reply.now);
          return { current, ttl };
        })
        .then(
          (result) => callback(null, result),
          (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
        );
    }

    #spec(timeWindow: number): LimitSpec {
      let spec = this.#specs.get(timeWindow);
      if (spec !== undefined) return spec;
      if (!Number.isSafeInteger(timeWindow) || timeWindow < 1)
        throw new InvalidArgumentError('timeWindow', 'a positive whole number of milliseconds', timeWindow);
      spec = hitCounterSpec(HIT_COUNTER_ID, timeWindow);
      // Bounded: a timeWindow function answering many lengths must not grow this for ever.
      if (this.#specs.size >= MAX_SPECS) this.#specs.clear();
      this.#specs.set(timeWindow, spec);
      return spec;
    }
  }
  return OnceflowStore as unknown as FastifyRateLimitStoreCtor;
}

// Window lengths remembered per store: an application uses a handful; a timeWindow function
// giving more only rebuilds a small object.
const MAX_SPECS = 64;

function checkName(path: string, namespace: string): void {
  if (utf8Bytes(namespace) > LIMITS.nameBytes)
    throw new InvalidOptionError(
      path,
      `a name of at most ${LIMITS.nameBytes} UTF-8 bytes with the route`,
      namespace,
    );
}

function refuseMovingWindows(settings: unknown, where: string): void {
  if (!isPlainObject(settings)) return;
  for (const option of ['continueExceeding', 'exponentialBackoff'] as const) {
    if (settings[option] === true)
      throw new InvalidOptionError(
        `${where}.${option}`,
        "false with onceflow's store (its windows are fixed; use onceflow's own plugin for other algorithms)",
        true,
      );
  }
}
