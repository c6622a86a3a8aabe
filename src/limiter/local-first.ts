// Local-first limits (DESIGN §3.12, seed 001 §3.2): a node leases a share of a hot key's budget
// from the store in one take and decides locally from it until the share runs out or its lease
// ends; cold keys, refusals and anything unusual go to the store one take at a time.
//
// Why leases and not the seed's snapshot + increments through a stream: a lease is an ordinary
// take of `share` points (one atomic script or statement on every store, already exact and
// tested), so the store never admits more than the limit in any window, counting shares as
// spent the moment they are leased. A stream of increments would count admissions after the
// fact, and the bound would then depend on the sync delay, which no node controls.
//
// The bound. Let S be the share and N the nodes leasing one key. Every admission a node makes
// locally is backed by a share the store charged at an earlier time t0 (the lease's take); a node
// holds at most one share of a key at a time. In any window [a, a + W): admissions backed by
// shares charged inside it are at most what the store admitted inside it (the limit), and shares
// charged before `a` that still admit after `a` are at most one per node, S each. So at most
// `limit + N x S` is admitted in any window: `slack = N x S`. Returning an unused rest keeps this:
// the store gives it back only while the share's charge still counts in the window it was charged
// to (`notAfter`, checked in the same atomic step), and only after this node stopped admitting
// from that share (a reward re-dates what the key has left to its own time, so that time is the
// store's, or one clock every node shares: never behind another node's charge). A node that dies
// holding a share never returns it: those points count as spent until they leave the window (the
// node loses at most S; nothing is counted twice). "One share at a time" holds through resets and
// evictions too: a share in flight for a dropped entry never admits (it goes back when it lands).
import { BoundedMap } from '../core/bounded-map.js';
import type { Clock } from '../core/clock.js';
import type { Emit } from '../core/observer.js';
import type { LimitCall, LimiterTakeReply } from '../store/limiter.js';
import type { Store } from '../store/store.js';
import { type Decision, decide, type LimitDecision } from '../windows/limits/decision.js';
import type { LimitSpec } from '../windows/limits/types.js';
import { verdict } from '../windows/limits/verdict.js';
import type { RateLimiter } from './rate-limiter.js';
import { costOf, timed } from './take-helpers.js';
import type { Limiter, LimiterKey, LimiterState, TakeOptions } from './types.js';

// The sweep runs every lease period, but not more often than this: it visits every tracked key
// (up to 2 x maxKeys = 20,000 by default), and a quiet key's rest given back up to 100 ms later
// only keeps points that count anyway a little longer (at most 200,000 visits a second).
const MIN_SWEEP_MS = 100;

/** What the local-first limiter needs, validated (see create-local-first.ts). */
export interface LocalFirstConfig {
  readonly store: Store;
  readonly namespace: string;
  readonly specs: readonly LimitSpec[];
  readonly passIn: Clock | undefined;
  readonly local: Clock;
  readonly timeoutMs: number;
  readonly name: string;
  readonly emit: Emit | undefined;
  readonly share: number;
  readonly nodes: number;
  readonly leaseMs: number;
  readonly hotAfter: number;
  readonly maxKeys: number;
}

/** One key's local state on this node. */
interface KeyEntry {
  readonly calls: LimitCall[];
  /** Points of the current share still to admit (0: none held). */
  left: number;
  /** Local time the share stops admitting. */
  until: number;
  /** Store time before which an unused rest may be given back (see notAfterOf). */
  notAfter: number;
  /** The store's time of the lease and this node's local time when its answer came. */
  storeAt: number;
  localAt: number;
  /** Per limit, what the store had left after charging the share: this node's view of the rest. */
  storeLeft: number[];
  resetAt: number[];
  /** Takes seen since `hitsFrom` (local time), while the key is cold. */
  hits: number;
  hitsFrom: number;
  hot: boolean;
  /** Local time until which takes go to the store one by one (a share was refused). */
  directUntil: number;
  /** The lease in flight: takes arriving meanwhile wait for it instead of leasing twice. */
  pending: Promise<void> | undefined;
  /** Local time of the last take: idle entries are dropped by the sweep. */
  lastUsed: number;
  /**
   * Dropped: nothing is admitted from it any more. A share that lands on it later is given back
   * (`'return'`: evicted, released, or the key rewarded or penalised) or dropped (`'drop'`: the
   * key was reset or set, which replaced the usage the share was part of).
   */
  dead: false | 'return' | 'drop';
}

/**
 * A limiter that decides hot keys locally from leased shares (built by createLocalFirstLimiter).
 * Everything but `take` goes to the store as the plain limiter does, after dropping this node's
 * share of the key (what a reset, set, reward or penalty leaves must not be overridden by a share
 * leased before it).
 */
export class LocalFirstLimiter implements Limiter {
  readonly limits: readonly LimitSpec[];
  /** The most this limiter's nodes may admit above a limit in any window: `nodes x share`. */
  readonly slack: number;
  readonly #inner: RateLimiter;
  readonly #c: LocalFirstConfig;
  readonly #keys: BoundedMap<string, KeyEntry>;
  readonly #returns = new Set<Promise<void>>();
  // Leases in flight: release() waits for them (each gives its share back once it lands).
  readonly #leasing = new Set<Promise<boolean>>();
  #sweeper: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  constructor(inner: RateLimiter, config: LocalFirstConfig) {
    this.#inner = inner;
    this.#c = config;
    this.limits = inner.limits;
    this.slack = config.nodes * config.share;
    // A BoundedMap keeps between half its bound and its bound (bounded-map.ts): at least maxKeys.
    this.#keys = new BoundedMap(2 * config.maxKeys);
  }

  take(key: LimiterKey, options?: TakeOptions): Promise<Decision> {
    if (typeof key !== 'string' || this.#closed || options?.maxWait !== undefined) {
      return this.#inner.take(key, options);
    }
    let cost: number;
    try {
      // Checked as a plain take checks it: malformed options or a misspelt `cost` are refused.
      cost = costOf(options);
    } catch (err) {
      return Promise.reject(err);
    }
    // A cost a share cannot hold goes to the store on its own.
    if (cost > this.#c.share) return this.#inner.take(key, options);
    const now = this.#c.local.now();
    let entry = this.#keys.get(key);
    if (entry === undefined) {
      let calls: LimitCall[];
      try {
        calls = this.#inner.callsOfKey(key);
      } catch (err) {
        return Promise.reject(err);
      }
      entry = newEntry(calls, now);
      this.#keys.set(key, entry);
    }
    entry.lastUsed = now;
    if (entry.left >= cost && now < entry.until) {
      entry.left -= cost;
      return Promise.resolve(this.#localDecision(entry, cost, now));
    }
    if (!entry.hot) {
      if (now - entry.hitsFrom >= this.#c.leaseMs) {
        entry.hits = 0;
        entry.hitsFrom = now;
      }
      if (++entry.hits < this.#c.hotAfter) return this.#inner.take(key, options);
      entry.hot = true;
    }
    if (now < entry.directUntil) return this.#inner.take(key, options);
    return this.#takeLeased(key, entry, cost, options);
  }

  // A hot key whose share is spent or over: wait for the lease in flight, or lease one; then
  // decide from it, or go to the store on its own when there is none.
  async #takeLeased(key: string, entry: KeyEntry, cost: number, options?: TakeOptions): Promise<Decision> {
    // Each round either admits from a share, or leases one (which this call then admits from
    // first, unless takes that were waiting already spent it), so a burst of waiters loops at
    // most until the store refuses a share and every take goes to the store.
    for (;;) {
      if (entry.pending !== undefined) await entry.pending;
      // Checked before admitting: a dropped entry's share (the key was reset, set, or evicted
      // and leased again by a new entry) never admits, so a node holds one live share a key.
      if (entry.dead !== false || this.#closed || this.#keys.get(key) !== entry) {
        if (entry.dead === false) entry.dead = 'return';
        return this.#inner.take(key, options);
      }
      const now = this.#c.local.now();
      if (entry.left >= cost && now < entry.until) {
        entry.left -= cost;
        return this.#localDecision(entry, cost, now);
      }
      if (now < entry.directUntil) return this.#inner.take(key, options);
      const lease = this.#lease(key, entry);
      this.#leasing.add(lease);
      // Settled either way (a clock that throws rejects this take alone): waiters then retry.
      const settle = () => {
        entry.pending = undefined;
        this.#leasing.delete(lease);
      };
      entry.pending = lease.then(settle, settle);
      if (!(await lease)) return this.#inner.take(key, options);
    }
  }

  // Gives back the unused rest of the share held (if any), then leases a new one. Resolves
  // whether a share is held now.
  async #lease(key: string, entry: KeyEntry): Promise<boolean> {
    this.#retire(entry);
    const { store, namespace, passIn, timeoutMs, share, local, leaseMs } = this.#c;
    let reply: LimiterTakeReply;
    try {
      const sent = (store.limiterTake as NonNullable<Store['limiterTake']>)({
        namespace,
        limits: entry.calls,
        cost: share,
        now: passIn?.now(),
        timeoutMs: timeoutMs === 0 ? undefined : timeoutMs,
      });
      reply = await timed(Promise.resolve(sent), timeoutMs);
    } catch {
      // The store failed: this take goes to it on its own and meets the degraded policy there.
      this.#event('failed', share);
      return false;
    }
    const now = local.now();
    if (!reply.allowed) {
      // Less than a share left: exact takes one by one until a share could fit again.
      entry.directUntil = now + leaseMs;
      this.#event('refused', share);
      return false;
    }
    const storeAt = reply.now;
    entry.storeAt = storeAt;
    entry.localAt = now;
    entry.notAfter = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.#c.specs.length; i++) {
      const spec = this.#c.specs[i] as LimitSpec;
      const v = reply.verdicts[i] as { remaining: number; resetAt: number };
      this.#observeDeviation(entry, i, spec, v.remaining + share);
      entry.storeLeft[i] = v.remaining;
      entry.resetAt[i] = v.resetAt;
      entry.notAfter = Math.min(entry.notAfter, notAfterOf(spec, storeAt));
    }
    entry.left = share;
    // The share admits until the lease ends, and never past the window it was charged to.
    entry.until = now + Math.min(leaseMs, entry.notAfter - storeAt);
    this.#event('granted', share);
    if (this.#closed || entry.dead !== false || this.#keys.get(key) !== entry) {
      // release() ran, or the key was dropped or evicted, while this lease was in flight: no take
      // admits from the share; it goes back unless a reset or set replaced what it was part of.
      if (entry.dead === 'drop') {
        entry.left = 0;
        entry.until = 0;
      } else {
        entry.dead = 'return';
        this.#retire(entry);
      }
      return false;
    }
    this.#sweep();
    return true;
  }

  // Stops admitting from the held share and gives its unused rest back (while it still counts).
  #retire(entry: KeyEntry): void {
    const left = entry.left;
    entry.left = 0;
    entry.until = 0;
    if (left === 0) return;
    const estimate = entry.storeAt + (this.#c.local.now() - entry.localAt);
    if (estimate >= entry.notAfter) {
      this.#event('expired', left);
      return;
    }
    const { store, namespace, passIn } = this.#c;
    // Read now: by the time the store answers, this entry may hold a newer share.
    const notAfter = entry.notAfter;
    const adjust = store.limiterAdjust;
    if (adjust === undefined) {
      this.#event('expired', left);
      return;
    }
    const given = adjust
      .call(store, {
        namespace,
        limits: entry.calls,
        op: 'reward',
        points: left,
        notAfter,
        now: passIn?.now(),
      })
      .then(
        (reply) => {
          // Past notAfter the store answers as a get: the rest stayed charged.
          this.#event(reply.now < notAfter ? 'returned' : 'expired', left);
        },
        () => this.#event('failed', left),
      )
      .finally(() => this.#returns.delete(given));
    this.#returns.add(given);
  }

  // A local answer: this node's view, the store's rest at the lease plus the share's rest.
  #localDecision(entry: KeyEntry, cost: number, now: number): Decision {
    const specs = this.#c.specs;
    const parts: LimitDecision[] = [];
    for (let i = 0; i < specs.length; i++) {
      const spec = specs[i] as LimitSpec;
      const rest = Math.min(spec.limit, (entry.storeLeft[i] as number) + entry.left);
      parts.push(verdict(spec, true, rest, entry.resetAt[i] as number, 0));
    }
    const decision = decide(entry.storeAt + (now - entry.localAt), true, parts, 'allowed', cost, specs);
    this.#c.emit?.({
      part: 'limiter',
      type: 'decision',
      limiter: this.#c.name,
      allowed: true,
      reason: 'allowed',
    });
    return decision;
  }

  // The consistency deviation of this node's view (docs/limits.md): what it believed the store
  // had used of limit i (its view after the last lease) against what the store had used just
  // before this lease. The difference is what other nodes took (and gave back) meanwhile.
  #observeDeviation(entry: KeyEntry, i: number, spec: LimitSpec, storeRest: number): void {
    const emit = this.#c.emit;
    if (emit === undefined) return;
    const view = entry.storeLeft[i];
    if (view === undefined || entry.resetAt[i] === undefined) return;
    emit({
      part: 'limiter',
      type: 'deviation',
      limiter: this.#c.name,
      limit: spec.id,
      max: spec.limit,
      estimate: Math.max(0, spec.limit - view),
      exact: Math.max(0, spec.limit - storeRest),
    });
  }

  #event(outcome: 'granted' | 'refused' | 'returned' | 'expired' | 'failed', points: number): void {
    this.#c.emit?.({ part: 'limiter', type: 'lease', limiter: this.#c.name, outcome, points });
  }

  // A timer while shares are held: it gives back the rest of shares whose lease ended (so a key
  // that went quiet does not keep its rest until the window passes) and drops idle keys. It does
  // not hold the process open.
  #sweep(): void {
    if (this.#sweeper !== undefined || this.#closed) return;
    this.#sweeper = setInterval(
      () => {
        const now = this.#c.local.now();
        let held = 0;
        for (const [key, entry] of this.#keys.entries()) {
          if (entry.left > 0 && now >= entry.until && entry.pending === undefined) this.#retire(entry);
          if (entry.left > 0) held++;
          else if (now - entry.lastUsed >= 2 * this.#c.leaseMs && entry.pending === undefined) {
            entry.dead = 'return';
            this.#keys.delete(key);
          }
        }
        if (held === 0) this.#stopSweep();
      },
      Math.max(this.#c.leaseMs, MIN_SWEEP_MS),
    );
    this.#sweeper.unref?.();
  }

  #stopSweep(): void {
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }

  /**
   * Gives back every share this node holds (what still counts) and stops leasing: later takes go
   * to the store one by one. Resolves when the store answered every return. Call it on shutdown
   * (a node that stops without it loses at most one share per hot key until the window passes).
   */
  async release(): Promise<void> {
    this.#closed = true;
    this.#stopSweep();
    for (const [, entry] of this.#keys.entries()) this.#retire(entry);
    this.#keys.clear();
    await Promise.allSettled([...this.#leasing]);
    await Promise.all([...this.#returns]);
  }

  // The other operations: this node's share of the key is dropped first, so what the operation
  // sets is not overridden by a share leased before it (nor by one in flight: it goes back when
  // it lands). `giveBack`: the rest is given back first (a reward or penalty adds to the usage the
  // store holds, the share's included); else it is dropped (a reset or set replaces that usage).
  #forget(key: LimiterKey, giveBack: boolean): void {
    if (typeof key !== 'string') return;
    const entry = this.#keys.get(key);
    if (entry === undefined) return;
    if (giveBack) this.#retire(entry);
    entry.left = 0;
    entry.until = 0;
    entry.dead = giveBack ? 'return' : 'drop';
    this.#keys.delete(key);
  }

  reset(key: LimiterKey): Promise<boolean> {
    this.#forget(key, false);
    return this.#inner.reset(key);
  }

  get(key: LimiterKey): Promise<LimiterState | undefined> {
    return this.#inner.get(key);
  }

  set(key: LimiterKey, points: number): Promise<LimiterState | undefined> {
    this.#forget(key, false);
    return this.#inner.set(key, points);
  }

  reward(key: LimiterKey, points: number): Promise<LimiterState | undefined> {
    this.#forget(key, true);
    return this.#inner.reward(key, points);
  }

  penalty(key: LimiterKey, points: number): Promise<LimiterState | undefined> {
    this.#forget(key, true);
    return this.#inner.penalty(key, points);
  }

  // Refused as the plain limiter refuses it without a `blockDuration` limit (local-first limits
  // have none: a share the store refused would block the key).
  block(key: LimiterKey, duration: Parameters<Limiter['block']>[1]): Promise<void> {
    return this.#inner.block(key, duration);
  }

  clearBlocks(): void {
    for (const [, entry] of this.#keys.entries()) {
      entry.left = 0;
      entry.until = 0;
      entry.dead = 'drop';
    }
    this.#keys.clear();
    this.#inner.clearBlocks();
  }
}

function newEntry(calls: LimitCall[], now: number): KeyEntry {
  return {
    calls,
    left: 0,
    until: 0,
    notAfter: 0,
    storeAt: 0,
    localAt: 0,
    storeLeft: [],
    resetAt: [],
    hits: 0,
    hitsFrom: now,
    hot: false,
    directUntil: 0,
    pending: undefined,
    lastUsed: now,
    dead: false,
  };
}

/**
 * The store time before which a share charged at `at` still counts in full in the window it was
 * charged to, so that giving back its unused rest takes back only its own points:
 * - `fixed-window`: the end of the aligned window holding `at`;
 * - `sliding-log`: `at + window` (the charge leaves the log then);
 * - `sliding-window`: the start of the bucket holding `at` plus the window (until then the bucket
 *   is one of the window's full buckets; after it the estimate only weighs it in part).
 */
export function notAfterOf(spec: LimitSpec, at: number): number {
  switch (spec.algorithm) {
    case 'fixed-window':
      return at - (at % spec.windowMs) + spec.windowMs;
    case 'sliding-window':
      return at - (at % spec.param) + spec.windowMs;
    default:
      return at + spec.windowMs;
  }
}
