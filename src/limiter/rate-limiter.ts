// The limiter createLimiter (limiter.ts) returns, once its options are validated: decides takes
// through the store, the block cache and the degraded policy.

import { BoundedMap } from '../core/bounded-map.js';
import type { Clock } from '../core/clock.js';
import type { Duration } from '../core/duration.js';
import { InvalidArgumentError, StoreError } from '../core/errors.js';
import { LIMITS, withinLimit } from '../core/limits.js';
import { type Emit, errorName } from '../core/observer.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, isWellFormed } from '../core/validate.js';
import type {
  LimitCall,
  LimiterAdjustCommand,
  LimiterDeleteCommand,
  LimiterTakeReply,
} from '../store/limiter.js';
import type { MemoryLimiterBackend } from '../store/memory/limiter.js';
import type { Store } from '../store/store.js';
import { type Decision, decide } from '../windows/limits/decision.js';
import type { LimitSpec } from '../windows/limits/types.js';
import { verdict } from '../windows/limits/verdict.js';
import { type BlockCache, blockedDecision } from './block-cache.js';
import type { DeviationSampler } from './deviation.js';
import { adjustKey, blockDurationMs, paced, resetKey, type StateTarget } from './state-ops.js';
import { costOf, partsOf, timed } from './take-helpers.js';
import type { DegradedPolicy, Limiter, LimiterKey, LimiterState, TakeOptions } from './types.js';

// Subjects whose key strings a limiter keeps (see #keyCache in RateLimiter). A BoundedMap keeps an
// entry for max / 2 - 1 calls after its last use and holds up to max: twice this bound, so a key
// used once every 20,000 takes or more often is never rebuilt (a busy set of 20,000 keys cycled
// through stays cached, as it did in a Map of 20,000).
const KEY_CACHE = 20_000;
// Degraded 'deny' cannot know when the store returns; this is the wait it suggests to clients.
const DEGRADED_RETRY_MS = 1000;

/** A take's subjects: one key, or one per distinct `by` of a multi-subject limiter. */
type Subjects = string | string[];

/** What {@link createLimiter} validated: everything a limiter needs to decide. */
export interface LimiterConfig {
  readonly store: Store;
  readonly specs: SubjectSpec[];
  readonly namespace: string;
  /** The time passed to the store, when not the store's own. */
  readonly passIn: Clock | undefined;
  /** The clock of the block cache and the local degraded limiter. */
  readonly local: Clock;
  readonly cache: BlockCache | undefined;
  readonly policy: DegradedPolicy;
  readonly fallback: Fallback | undefined;
  readonly timeoutMs: number;
  readonly onDegraded: ((error: unknown) => void) | undefined;
  /** The limiter's name, as its events carry it. */
  readonly name: string;
  readonly emit: Emit | undefined;
  /** Measures the sliding-window estimate on sampled keys: only with an observer (see deviation.ts). */
  readonly deviation: DeviationSampler | undefined;
}

/** A limit with the subject it counts by (`undefined`: the plain key). */
export type SubjectSpec = LimitSpec & { readonly by: string | undefined };

/** The local limiter of the degraded policy `{ mode: 'local', share }`. */
export interface Fallback {
  readonly backend: MemoryLimiterBackend;
  readonly specs: LimitSpec[];
}

/**
 * The limiter {@link createLimiter} returns. A class, not an object of closures: V8 inlines
 * prototype methods into their callers' optimised code for good, where closures made per limiter
 * are inlined as that limiter's objects, so every caller optimised with them would be thrown away
 * and recompiled once the limiter is collected (a limiter per tenant, per test, per bench run).
 */
export class RateLimiter implements Limiter {
  readonly limits: readonly LimitSpec[];
  readonly #config: LimiterConfig;
  // What every take reads, held as fields of their own (one load, not two); the rest stays in #config.
  readonly #specs: SubjectSpec[];
  readonly #store: Store;
  readonly #cache: BlockCache | undefined;
  readonly #passIn: Clock | undefined;
  readonly #emit: Emit | undefined;
  readonly #deviation: DeviationSampler | undefined;
  /** Distinct subject names (`by`), in first-use order; one entry: a single-subject limiter. */
  readonly #bys: string[];
  readonly #multiSubject: boolean;
  // Every limit counts by the plain `key`: take(key) with a string (the common limiter).
  readonly #plainKeys: boolean;
  // Calls per subject, kept so a hot subject's take builds nothing (and a store that keeps what
  // it derives from a call, its key or its state, finds it again: the memory store reaches the
  // state with no key built and no Map lookup). A pure cache: 20,000 to 40,000 subjects x ~150
  // bytes ≈ 6 MB per limiter at most; the least recently used go first when full (BoundedMap:
  // O(1), where a Map evicted from its front walks the holes its deletes leave: ~10-20 µs per new
  // key once full, scripts/micro-costs.mjs).
  readonly #keyCache = new BoundedMap<string, LimitCall[]>(2 * KEY_CACHE);
  // The store answered a take synchronously: it decides in this process, on its own clock
  // (the memory store). The block cache, on the limiter's clock, then stands aside unless the
  // limiter passes its time in: it could not tell when the store's clock lifts a block, and
  // with nothing to save it would only cost.
  #decidesHere = false;
  // Bumped by clearBlocks(): an answer to a take sent before it (a refusal of the state a reset
  // just removed) must not re-arm a block after it.
  #epoch = 0;

  constructor(config: LimiterConfig) {
    this.#config = config;
    this.#specs = config.specs;
    this.limits = Object.freeze([...config.specs]);
    this.#store = config.store;
    this.#cache = config.cache;
    this.#passIn = config.passIn;
    this.#emit = config.emit;
    this.#deviation = config.deviation;
    this.#bys = [...new Set(config.specs.map((s) => s.by ?? 'key'))];
    this.#multiSubject = this.#bys.length > 1;
    this.#plainKeys = this.#bys.length === 1 && this.#bys[0] === 'key';
  }

  clearBlocks(): void {
    this.#cache?.clear();
    this.#config.fallback?.backend.reset(this.#config.namespace);
    this.#epoch++;
  }

  async reset(key: LimiterKey): Promise<boolean> {
    const subjects = this.#subjectsOf(key); // a bad key: the same typed error as take's
    const target = this.#target(subjects);
    const command = { namespace: target.namespace, limits: target.calls };
    // Answers to takes sent before the reset must not re-arm a block after it.
    this.#epoch++;
    // What this process keeps is cleared now, so a take called right after the reset (not
    // awaited) is not refused from it, and again once the store answered.
    this.#forgetLocally(subjects, command);
    try {
      return await resetKey(target);
    } finally {
      this.#forgetLocally(subjects, command);
    }
  }

  get(key: LimiterKey): Promise<LimiterState | undefined> {
    return this.#adjust(key, 'get');
  }

  set(key: LimiterKey, points: number): Promise<LimiterState | undefined> {
    return this.#adjust(key, 'set', points);
  }

  reward(key: LimiterKey, points: number): Promise<LimiterState | undefined> {
    return this.#adjust(key, 'reward', points);
  }

  penalty(key: LimiterKey, points: number): Promise<LimiterState | undefined> {
    return this.#adjust(key, 'penalty', points);
  }

  async block(key: LimiterKey, duration: Duration): Promise<void> {
    await this.#adjust(key, 'block', undefined, blockDurationMs(duration));
  }

  // One state operation for every limit of `key` (state-ops.ts). Unless it only reads, the block
  // cache forgets the key first (its state may now admit what a cached refusal refused), and
  // answers sent before it must not re-arm one.
  async #adjust(
    key: LimiterKey,
    op: LimiterAdjustCommand['op'],
    points?: number,
    durationMs?: number,
  ): Promise<LimiterState | undefined> {
    const subjects = this.#subjectsOf(key);
    if (op !== 'get') {
      this.#epoch++;
      if (typeof subjects === 'string') this.#cache?.delete(subjects);
      else this.#cache?.clear();
    }
    return adjustKey(this.#target(subjects), op, points, durationMs);
  }

  // What a state operation on `subjects` needs: the store, one call per limit, the time.
  #target(subjects: Subjects): StateTarget {
    return {
      store: this.#store,
      namespace: this.#config.namespace,
      specs: this.#specs,
      calls: this.#callsFor(subjects, this.#specs),
      now: this.#passIn?.now(),
    };
  }

  // A block names a list of subjects; one reset subject may be what blocked another list (the IP
  // of { user: 'u2', ip }), so a multi-subject limiter forgets every block.
  #forgetLocally(subjects: Subjects, command: LimiterDeleteCommand): void {
    if (typeof subjects === 'string') this.#cache?.delete(subjects);
    else this.#cache?.clear();
    this.#deviation?.forget(command.limits);
    // The local fallback counts with its own scaled limits (a share of each), whose state shapes
    // may differ from the store's (a GCRA's limit, a sliding log's form past 512): its states are
    // named by its own specs.
    const fallback = this.#config.fallback;
    fallback?.backend.delete({
      namespace: command.namespace,
      limits: this.#callsFor(subjects, fallback.specs),
    });
  }

  take(key: LimiterKey, takeOptions?: TakeOptions): Promise<Decision> {
    const maxWait = (takeOptions as TakeOptions | undefined)?.maxWait;
    if (maxWait !== undefined) {
      let ms: number;
      try {
        ms = timerDuration('maxWait', maxWait);
      } catch (err) {
        return Promise.reject(err);
      }
      const { maxWait: _, ...rest } = takeOptions as TakeOptions;
      return paced(() => this.take(key, rest), ms);
    }
    let cost: number;
    let subjects: Subjects;
    let calls: LimitCall[];
    let given: number | undefined;
    try {
      cost = costOf(takeOptions);
      // A plain key seen before was checked then: its calls are cached under it (only valid keys
      // are). Not for a limiter that counts by named subjects: its cache holds subject values,
      // and a plain string key must still be refused there.
      const seen = this.#plainKeys && typeof key === 'string' ? this.#keyCache.get(key) : undefined;
      if (seen !== undefined) {
        subjects = key as string;
        calls = seen;
      } else {
        subjects = this.#subjectsOf(key);
        calls = this.#callsOf(subjects);
      }
      // A passed-in time is read (and checked) once, here: a clock that answers NaN fails this
      // call alone, before it can reach a batch that other callers share.
      given = this.#passIn?.now();
    } catch (err) {
      return Promise.reject(err);
    }
    const cache = this.#decidesHere && this.#passIn === undefined ? undefined : this.#cache;
    // Several subjects: as JSON, so no two lists share a key (a joined list would: 'a\nb' + 'c'
    // and 'a' + 'b\nc').
    const cacheKey =
      cache === undefined ? '' : typeof subjects === 'string' ? subjects : JSON.stringify(subjects);
    // Local time before the store is asked: a block's wait counts from here (see BlockCache).
    let asked = 0;
    if (cache !== undefined) {
      asked = given ?? this.#config.local.now();
      const block = cache.get(cacheKey, cost, asked);
      if (block !== undefined) {
        const blocked = blockedDecision(block, asked);
        if (this.#emit !== undefined) this.#observe(blocked);
        return Promise.resolve(blocked);
      }
    }
    const timeoutMs = this.#config.timeoutMs;
    let answer: LimiterTakeReply | PromiseLike<LimiterTakeReply>;
    try {
      // The store is told how long this take waits: past it, the degraded answer is given and a
      // store must not charge the take when its command arrives late.
      answer = (this.#store.limiterTake as NonNullable<Store['limiterTake']>)({
        namespace: this.#config.namespace,
        limits: calls,
        cost,
        now: given,
        timeoutMs: timeoutMs === 0 ? undefined : timeoutMs,
      });
    } catch (err) {
      // A store that throws instead of rejecting still ends in the degraded policy, on a
      // microtask as a rejection would, never a throw.
      return Promise.resolve().then(() => this.#degrade(err, subjects, cost));
    }
    if (typeof (answer as Partial<PromiseLike<unknown>> | undefined)?.then !== 'function') {
      // Answered in this process (the memory store): the reply is the decision at once, with no
      // promise of the store's; a reply that is none is a store failure, handled on a microtask.
      let decision: Decision;
      try {
        decision = this.#decisionOf(answer as LimiterTakeReply, cost);
      } catch (err) {
        return Promise.resolve().then(() => this.#degrade(err, subjects, cost));
      }
      this.#decidesHere = true;
      if (cache !== undefined && this.#passIn !== undefined) this.#remember(cacheKey, cost, asked, decision);
      if (this.#emit !== undefined) this.#observeAnswer(decision, calls, cost);
      return Promise.resolve(decision);
    }
    // A plain promise chain, not an async function: one fewer promise and microtask per take.
    const epoch = this.#epoch;
    return timed(answer as PromiseLike<LimiterTakeReply>, timeoutMs).then(
      (reply) => {
        const decision = decide(
          reply.now,
          reply.allowed,
          partsOf(reply, this.#specs),
          undefined,
          cost,
          this.#specs,
        );
        if (cache !== undefined && epoch === this.#epoch) this.#remember(cacheKey, cost, asked, decision);
        if (this.#emit !== undefined) this.#observeAnswer(decision, calls, cost);
        return decision;
      },
      (err: unknown) => this.#degrade(err, subjects, cost),
    );
  }

  // A synchronous reply as the limiter's decision; not a reply at all is a TypeError (the store's
  // failure, which the degraded policy takes).
  #decisionOf(reply: LimiterTakeReply, cost: number): Decision {
    if (typeof reply?.allowed !== 'boolean') {
      throw new TypeError(`limiterTake answered ${String(reply)}, not a reply`);
    }
    return decide(reply.now, reply.allowed, partsOf(reply, this.#specs), undefined, cost, this.#specs);
  }

  // A take's subjects: the key itself for a limiter whose limits all use the subject `key` (the
  // common case: no array per take), else one subject per distinct `by`, in `#bys` order.
  #subjectsOf(key: string | Readonly<Record<string, string>>): Subjects {
    const bys = this.#bys;
    if (typeof key === 'string') {
      if (key.length === 0 || this.#multiSubject || bys[0] !== 'key' || !isWellFormed(key)) {
        // A lone surrogate has no UTF-8 form: on Redis it would share U+FFFD's counters.
        if (key.length === 0 || !isWellFormed(key))
          throw new InvalidArgumentError('key', 'a non-empty, well-formed Unicode string', key);
        throw new InvalidArgumentError('key', `an object with ${bys.map((b) => `\`${b}\``).join(', ')}`, key);
      }
      // Measured only when it might not fit (a UTF-16 unit is at most 3 bytes): the hot path.
      return key.length * 3 > LIMITS.keyBytes ? withinLimit('key', key, 'keyBytes') : key;
    }
    if (!isPlainObject(key)) throw new InvalidArgumentError('key', 'a string or an object of subjects', key);
    const subjects = bys.map((by) => {
      const v = key[by];
      if (typeof v !== 'string' || v.length === 0 || !isWellFormed(v))
        throw new InvalidArgumentError(`key.${by}`, 'a non-empty, well-formed Unicode string', v);
      return withinLimit(`key.${by}`, v, 'keyBytes');
    });
    return this.#multiSubject ? subjects : (subjects[0] as string);
  }

  // The calls of a take, from the limiter's cache of them for a single subject.
  /**
   * Internal, for local-first limits (local-first.ts): the calls of a plain key, checked as a take
   * checks it (a bad key throws the same typed error), the same objects a take sends.
   */
  callsOfKey(key: string): LimitCall[] {
    return this.#keyCache.get(key) ?? this.#callsOf(this.#subjectsOf(key) as string);
  }

  #callsOf(subjects: Subjects): LimitCall[] {
    if (typeof subjects !== 'string') return this.#callsFor(subjects, this.#specs);
    let calls = this.#keyCache.get(subjects);
    if (calls === undefined) {
      calls = this.#callsFor(subjects, this.#specs);
      this.#keyCache.set(subjects, calls);
    }
    return calls;
  }

  // One call per limit, never changed after (a store may keep what it derives from one). Every limit counts by
  // the one subject, or each by its own: then each call names its subject (`by`).
  #callsFor(subjects: Subjects, forSpecs: readonly LimitSpec[]): LimitCall[] {
    if (typeof subjects === 'string') {
      return forSpecs.map((spec) => ({ spec, subject: subjects }));
    }
    return forSpecs.map((spec, i) => {
      const by = this.#specs[i]?.by ?? 'key';
      return { spec, subject: subjects[this.#bys.indexOf(by)] as string, by };
    });
  }

  #observe(decision: Decision): void {
    (this.#emit as Emit)({
      part: 'limiter',
      type: 'decision',
      limiter: this.#config.name,
      allowed: decision.allowed,
      reason: decision.reason,
    });
  }

  // A decision the store answered: its event, and an admission's sample of the estimate.
  #observeAnswer(decision: Decision, calls: LimitCall[], cost: number): void {
    this.#observe(decision);
    if (decision.allowed) this.#deviation?.admitted(calls, cost, decision);
  }

  #degrade(err: unknown, subjects: Subjects, cost: number): Decision {
    const decision = this.#degraded(err, subjects, cost);
    if (this.#emit !== undefined) this.#observe(decision);
    return decision;
  }

  #degraded(err: unknown, subjects: Subjects, cost: number): Decision {
    const { policy, fallback, local } = this.#config;
    this.#config.onDegraded?.(err);
    const emit = this.#emit;
    if (emit !== undefined) {
      emit({
        part: 'limiter',
        type: 'degraded',
        limiter: this.#config.name,
        policy: typeof policy === 'string' ? policy : 'local',
        error: errorName(err),
      });
    }
    if (policy === 'throw') throw err instanceof StoreError ? err : new StoreError('limiterTake', err);
    const at = local.now();
    if (fallback !== undefined) {
      const reply = fallback.backend.take({
        namespace: this.#config.namespace,
        limits: this.#callsFor(subjects, fallback.specs),
        cost,
        now: at,
      });
      return decide(
        reply.now,
        reply.allowed,
        partsOf(reply, fallback.specs),
        'degraded-local',
        cost,
        fallback.specs,
      );
    }
    const allowed = policy === 'allow';
    const parts = this.#specs.map((s) => verdict(s, allowed, 0, at, allowed ? 0 : DEGRADED_RETRY_MS));
    return decide(at, allowed, parts, allowed ? 'degraded-allow' : 'degraded-deny');
  }

  // A refusal is remembered until the wait it names is over. An admission changes the key's state
  // (a later refusal of another cost would need longer than a block remembered before it), so it
  // forgets the key's block: a blocked answer's wait stays the store's.
  #remember(cacheKey: string, cost: number, asked: number, decision: Decision): void {
    const cache = this.#cache as BlockCache;
    if (decision.allowed) {
      if (cost > 0) cache.delete(cacheKey);
    } else if (decision.retryAfterMs !== Number.POSITIVE_INFINITY) {
      cache.set(cacheKey, cost, asked, decision);
    }
  }
}
