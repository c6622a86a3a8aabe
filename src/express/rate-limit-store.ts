// A store for express-rate-limit (its `Store` interface, v7 and v8) on any onceflow store with
// limiter support: the memory store, Redis, PostgreSQL. express-rate-limit decides itself
// (totalHits against its own `limit`), so the store only counts, and must count every hit, even
// past any limit. It does so with two fixed-window counters of a huge limit, which onceflow's
// limiter contract charges atomically, all or nothing:
//
//   A: charged by every increment           B: charged by every increment and every decrement
//
// totalHits = A - (B - A) = 2A - B. An increment is one take of cost 1 on both (one round trip);
// a decrement is one take of cost 1 on B alone, with B's limit set to 2A as just read: it is
// refused when it would take the count below zero. (The contract has no negative cost: a
// decrement is a second counter. Fixed-window states are keyed without their limit, so B can be
// read under any limit.)
import type { Clock } from '../core/clock.js';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { withinLimit } from '../core/limits.js';
import { isPlainObject, isWellFormed, keysOf, knownKeys, nonEmptyString } from '../core/validate.js';
import { limiterNamespace } from '../limiter/keys.js';
import type { LimitCall, LimiterTakeReply } from '../store/limiter.js';
import type { Store } from '../store/store.js';
import { hitCounterSpec } from '../windows/limits/spec.js';
import { limiterTime } from '../windows/limits/time.js';
import type { LimitSpec } from '../windows/limits/types.js';

/** What express-rate-limit's `Store` answers for a client (its `ClientRateLimitInfo`). */
export interface ClientRateLimitInfo {
  totalHits: number;
  resetTime: Date | undefined;
}

/** Options of {@link OnceflowStore}. */
export interface OnceflowStoreOptions {
  /** Where the counters live: a store with limiter support (`memoryStore()`, `createRedisStore()`, `createPostgresStore()`). */
  store: Store;
  /**
   * Keeps the counters of several rate limits on one store apart (one per `rateLimit()` of
   * express-rate-limit), like a limiter's `name`; also the `prefix` express-rate-limit reads.
   * Default `'express-rate-limit'`. At most 256 bytes.
   */
  name?: string;
  /**
   * The time of each count. Default: the store's own (Redis `TIME`: one clock for every process).
   * A `Clock` (a `FakeClock` in tests) passes its time in.
   */
  clock?: Clock;
}

const OPTIONS = keysOf<OnceflowStoreOptions>({ store: true, name: true, clock: true });
// express-rate-limit's own default `windowMs` (one minute), until init() gives the real one.
const DEFAULT_WINDOW_MS = 60_000;
// A decrement that finds the count moved under it (a concurrent increment) reads and tries
// again; each retry follows a change of another process, so 8 only runs out under a burst of
// increments on that very key, when one hit not taken back is within express-rate-limit's own
// tolerance (its memory store loses decrements across a window's end too).
const DECREMENT_ATTEMPTS = 8;

/**
 * express-rate-limit's `Store`, counting on an onceflow store: exact across every process that
 * shares the store (one Redis), `localKeys: false`.
 *
 * Windows are fixed and aligned on multiples of `windowMs` (since the epoch), where
 * express-rate-limit's own stores start a client's window at its first hit: a client's first
 * window may be shorter; `resetTime` is always that window's end.
 */
export class OnceflowStore {
  /** Keys counted here are seen by every instance on the same store. */
  readonly localKeys = false;
  /** What express-rate-limit tells stores apart by: the `name`. */
  readonly prefix: string;
  readonly #store: Store;
  readonly #namespace: string;
  readonly #clock: Clock | undefined;
  #a!: LimitSpec;
  #b!: LimitSpec;
  #huge = 0;

  constructor(options: OnceflowStoreOptions) {
    if (!isPlainObject(options as unknown))
      throw new InvalidOptionError('options', 'an object like { store }', options);
    knownKeys('', options, OPTIONS);
    const { store } = options;
    if (typeof store?.limiterTake !== 'function' || typeof store.limiterDelete !== 'function')
      throw new InvalidOptionError(
        'store',
        'a store with limiter support (memoryStore(), createRedisStore(), createPostgresStore())',
        store,
      );
    const name = nonEmptyString('name', options.name ?? 'express-rate-limit');
    withinLimit('name', name, 'nameBytes');
    if (options.clock !== undefined && typeof options.clock?.now !== 'function')
      throw new InvalidOptionError('clock', 'an object with now()', options.clock);
    this.#store = store;
    this.prefix = name;
    this.#namespace = limiterNamespace(name);
    this.#clock = options.clock;
    this.#window(DEFAULT_WINDOW_MS);
  }

  /** Called by express-rate-limit with its options: takes `windowMs` (whole ms, at least 1). */
  init(options: { windowMs?: number }): void {
    const windowMs = options?.windowMs ?? DEFAULT_WINDOW_MS;
    if (!Number.isSafeInteger(windowMs) || windowMs < 1)
      throw new InvalidOptionError('windowMs', 'a positive whole number of milliseconds', windowMs);
    this.#window(windowMs);
  }

  #window(windowMs: number): void {
    this.#a = hitCounterSpec('hits', windowMs);
    this.#b = hitCounterSpec('changes', windowMs);
    this.#huge = this.#a.limit;
  }

  // A client's two counters, charged together by each hit; `decrement` charges the second alone (hits = 2A - B).
  #pair(subject: string): LimitCall[] {
    return [
      { spec: this.#a, subject },
      { spec: this.#b, subject },
    ];
  }

  /** Counts a hit: the client's hits in this window, and when it ends. */
  async increment(key: string): Promise<ClientRateLimitInfo> {
    const subject = checkKey(key);
    const reply = await this.#take(this.#pair(subject), 1);
    return this.#info(reply) as ClientRateLimitInfo;
  }

  /** Takes one hit back (express-rate-limit's skipSuccessfulRequests / skipFailedRequests); never below zero. */
  async decrement(key: string): Promise<void> {
    const subject = checkKey(key);
    for (let i = 0; i < DECREMENT_ATTEMPTS; i++) {
      const read = await this.#read(subject);
      const a = this.#huge - (read.verdicts[0]?.remaining ?? this.#huge);
      const b = this.#huge - (read.verdicts[1]?.remaining ?? this.#huge);
      if (2 * a - b <= 0) return;
      // B may reach 2A as read: a concurrent increment raised B (and A) meanwhile and is refused
      // here, then read again. The read's time keeps both steps in one window.
      const reply = await this.#take([{ spec: { ...this.#b, limit: 2 * a }, subject }], 1, read.now);
      if (reply.allowed) return;
    }
  }

  /** The client's hits in this window and when it ends; undefined when it has none. */
  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    return this.#info(await this.#read(checkKey(key)));
  }

  /** Forgets the client's hits. */
  async resetKey(key: string): Promise<void> {
    const subject = checkKey(key);
    await this.#store.limiterDelete?.({
      namespace: this.#namespace,
      limits: this.#pair(subject),
    });
  }

  /** Forgets every client's hits (of this `name`). Needs a store with `limiterReset`. */
  async resetAll(): Promise<void> {
    if (typeof this.#store.limiterReset !== 'function')
      throw new InvalidOptionError('store', 'a store with limiterReset for resetAll()', this.#store);
    await this.#store.limiterReset(this.#namespace);
  }

  #read(subject: string): Promise<LimiterTakeReply> {
    return this.#take(this.#pair(subject), 0);
  }

  async #take(limits: LimitCall[], cost: number, now?: number): Promise<LimiterTakeReply> {
    const at = now ?? (this.#clock === undefined ? undefined : limiterTime(this.#clock.now(), 'clock.now()'));
    return await (this.#store.limiterTake as NonNullable<Store['limiterTake']>)({
      namespace: this.#namespace,
      limits,
      cost,
      now: at,
    });
  }

  #info(reply: LimiterTakeReply): ClientRateLimitInfo | undefined {
    const [va, vb] = reply.verdicts;
    if (va === undefined || vb === undefined) return undefined;
    const a = this.#huge - va.remaining;
    if (a <= 0) return undefined;
    const b = this.#huge - vb.remaining;
    return { totalHits: Math.max(0, 2 * a - b), resetTime: new Date(va.resetAt) };
  }
}

/** express-rate-limit's store, as a function: `new OnceflowStore(options)`. */
export function createExpressRateLimitStore(options: OnceflowStoreOptions): OnceflowStore {
  return new OnceflowStore(options);
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || !isWellFormed(key))
    throw new InvalidArgumentError('key', 'a non-empty, well-formed string', key);
  return withinLimit('key', key, 'keyBytes');
}
