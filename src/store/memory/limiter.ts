import type { Clock } from '../../core/clock.js';
import { StoreError } from '../../core/errors.js';
import { MATH } from '../../windows/limits/algorithms.js';
import { limiterCost } from '../../windows/limits/cost.js';
import { type Decision, decide } from '../../windows/limits/decision.js';
import { checkSpec } from '../../windows/limits/spec.js';
import { CLIENT_STATE_SLACK_MS, limiterTime, STATE_SLACK_MS } from '../../windows/limits/time.js';
import type { LimitSpec, LimitVerdict } from '../../windows/limits/types.js';
import type { LimitCall, LimiterTakeCommand, LimiterTakeReply } from '../limiter.js';

interface Entry {
  state: unknown;
  expiresAt: number;
  /** When the sweep may drop it: `expiresAt` plus the stores' slack (see time.ts), as Redis's TTL. */
  sweepAt: number;
  /** The backend holding it: a memo from another backend is ignored. */
  readonly owner: object;
  /** Removed from the map (swept or reset): a memo pointing here is stale. */
  dead: boolean;
}

// Expired states are dropped by a full pass, no timer per key (rate-limiter-flexible's memory
// limiter pays one setTimeout per key) and no allocation per visit (Map#forEach; an iterator
// stepped a few entries per take allocates two objects per entry). The pass is O(keys): ~10-20 ms
// per million (a Map#forEach that reads each entry's expiry, timed on a Map of a million). It runs
// once the takes plus the entries created since the last pass reach max(SWEEP_MIN, S), S the
// entries that pass left (its survivors: the states still counting, or within their slack, then).
// Hence the bound, for any pattern of keys:
//   size <= S + max(SWEEP_MIN, S) + (limits per take - 1) <= 2 * max(SWEEP_MIN, S) + limits - 1
// (between two passes, fewer than max(SWEEP_MIN, S) entries were created, and a take creates its
// entries, at most one per limit, after its check). S is the keys charged within one window plus
// the slack before that pass (1 s; 10 min for times passed in: see time.ts, the same as Redis's
// TTLs, so both stores forget a state at the same time). Amortised: a pass visits at most
// 2 * max(SWEEP_MIN, S) + limits entries, and at least max(SWEEP_MIN, S) / (1 + limits) takes came
// since the last (each counts 1, and 1 per entry it created): 2 (1 + limits) visits per take at
// most, 2 for takes of keys already held.
// (Counting against the map's current size instead, a stream of new keys would never trigger a
// pass: the size grows with every take that counts towards it.)
const SWEEP_MIN = 1024;

// Specs a direct `take` has checked (the limiter's own come from toSpec): each object once.
const checkedSpecs = new WeakSet<LimitSpec>();

/**
 * The limiter side of the memory store: limiter state in a Map, one synchronous block per decision
 * (atomic by construction); the reference model every other store is tested against.
 *
 * A class, not closures: V8 inlines its prototype methods into the optimised code of their
 * callers, and a prototype method lives as long as the module. Closures made per backend are
 * inlined as objects of that backend: once a backend is collected, every caller optimised with it
 * is thrown away and recompiled (with closures, a fresh memory limiter per run after a GC takes
 * ~1.5x longer per take: scripts/limiter-memory-ab.mjs against a build of closures).
 */
export class MemoryLimiterBackend {
  readonly #clock: Clock;
  readonly #entries = new Map<string, Entry>();
  readonly #givenSlack: number;
  readonly #sweepMin: number;
  // Takes and entries created since the last sweep, and the entries that sweep left (see SWEEP_MIN).
  #sinceSweep = 0;
  #survivors = 0;

  /**
   * `givenSlack`: how long past its expiry a state is kept when the time was passed in (see
   * time.ts). A store shared with callers that pass their own clock keeps it as Redis does; the
   * limiter's local fallback, whose time is always its own, keeps states no longer than on the
   * store's own clock (during an outage it may hold one state per client IP).
   */
  constructor(clock: Clock, givenSlack = CLIENT_STATE_SLACK_MS, sweepMin = SWEEP_MIN) {
    this.#clock = clock;
    this.#givenSlack = givenSlack;
    this.#sweepMin = sweepMin;
  }

  /**
   * Keys held (expired ones are dropped as the sweep passes them): at most
   * `2 * max(1024, survivors) + limits per take - 1`, `survivors` the keys still counting (or
   * within their slack) at the last sweep: see {@link MemoryLimiterBackend.sweepBound}.
   */
  get size(): number {
    return this.#entries.size;
  }

  /** Internal (tests): the bound `size` stays within until the next sweep, for one limit per take. */
  get sweepBound(): number {
    return 2 * Math.max(this.#sweepMin, this.#survivors);
  }

  /** One multi-limit decision, answered as a store reply. */
  take({ limits, cost, now: given }: LimiterTakeCommand): LimiterTakeReply {
    const now = this.#timeOf(given);
    limiterCost(cost);
    for (let i = 0; i < limits.length; i++) {
      const spec = (limits[i] as LimitCall).spec;
      if (!checkedSpecs.has(spec)) {
        checkSpec(spec, `limits[${i}].spec`);
        checkedSpecs.add(spec);
      }
    }
    const verdicts = this.#settle(limits, cost, now, this.#slackOf(given));
    return { now, allowed: allAllowed(verdicts), verdicts };
  }

  /**
   * The same decision, answered as the limiter's {@link Decision} (the memory store's
   * in-process `decide`, see in-process.ts): no command, reply or second list per take.
   */
  decide(limits: readonly LimitCall[], cost: number, given: number | undefined): Decision {
    // A direct caller's time and cost are checked too (the limiter's own are checked already; a
    // NaN cost would never fit a bucket, and a sliding window would loop on it).
    const now = this.#timeOf(given);
    limiterCost(cost);
    const verdicts = this.#settle(limits, cost, now, this.#slackOf(given));
    return decide(now, allAllowed(verdicts), verdicts, undefined);
  }

  /**
   * {@link decide} for one limit (the in-process `decideOne`): the call
   * itself instead of a list, and no second pass over the limits (one limit has no other to ask).
   */
  decideOne(call: LimitCall, cost: number, given: number | undefined): Decision {
    const now = this.#timeOf(given);
    limiterCost(cost);
    this.#sweepWhenDue(now);
    // The entry is found once and its live state read once, for the verdict and the charge.
    const entry = this.#entryOf(call);
    const spec = call.spec;
    const math = MATH[spec.algorithm];
    const state = liveState(entry, now);
    const verdict = math.decide(spec, state, now, cost);
    if (verdict.allowed && cost > 0) {
      this.#keep(call, entry, math.commit(spec, state, now, cost), this.#slackOf(given));
    }
    return decide(now, verdict.allowed, [verdict], undefined);
  }

  /** Drops every state whose key lies in `namespace`'s key space; returns how many. */
  reset(namespace: string): number {
    let n = 0;
    for (const [key, entry] of this.#entries) {
      if (inNamespace(key, namespace)) {
        this.#entries.delete(key);
        retire(entry);
        n++;
      }
    }
    return n;
  }

  /** Drops the states under `keys`; returns how many there were (live or not yet swept). */
  delete(keys: readonly string[]): number {
    let n = 0;
    for (const key of keys) {
      const entry = this.#entries.get(key);
      if (entry === undefined) continue;
      this.#entries.delete(key);
      retire(entry);
      n++;
    }
    return n;
  }

  // A decision's time: the store's clock, or the one a caller passed in (checked, as the limiter
  // checks its clock: a store command may come from any caller).
  #timeOf(given: number | undefined): number {
    return given === undefined ? storeNow(this.#clock) : limiterTime(given, 'now');
  }

  // How long past its expiry a state written at that time is kept (see the constructor).
  #slackOf(given: number | undefined): number {
    return given === undefined ? STATE_SLACK_MS : this.#givenSlack;
  }

  // The entry of a call: its memo when valid (the common case: a hot subject), else the map.
  #entryOf(call: LimitCall): Entry | undefined {
    const memo = call.handle as Entry | undefined;
    if (memo !== undefined && memo.owner === this && !memo.dead) return memo;
    const entry = this.#entries.get(call.key);
    if (entry !== undefined) call.handle = entry;
    return entry;
  }

  // One take more since the last sweep; a full pass once takes and creations reach the last
  // pass's survivors (see SWEEP_MIN).
  #sweepWhenDue(now: number): void {
    if (++this.#sinceSweep >= this.#sweepMin && this.#sinceSweep >= this.#survivors) {
      this.#sinceSweep = 0;
      this.#entries.forEach(sweepEntry, now);
      this.#survivors = this.#entries.size;
    }
  }

  // Every limit's verdict at `now`; the cost is charged to all of them when all admit it.
  #settle(limits: readonly LimitCall[], cost: number, now: number, slack: number): LimitVerdict[] {
    this.#sweepWhenDue(now);
    const verdicts: LimitVerdict[] = new Array(limits.length);
    let allowed = true;
    for (let i = 0; i < limits.length; i++) {
      const verdict = this.#verdict(limits[i] as LimitCall, now, cost);
      verdicts[i] = verdict;
      if (!verdict.allowed) allowed = false;
    }
    if (!allowed) {
      // Nothing is charged: a limit that would have admitted reports itself as it is now (its
      // answer to a cost of 0), not as it would have been after this request.
      for (let i = 0; i < limits.length; i++) {
        if (!(verdicts[i] as LimitVerdict).allowed) continue;
        verdicts[i] = this.#verdict(limits[i] as LimitCall, now, 0);
      }
    } else if (cost > 0) {
      for (let i = 0; i < limits.length; i++) {
        this.#charge(limits[i] as LimitCall, cost, now, slack);
      }
    }
    return verdicts;
  }

  // One limit's answer to `cost` at `now`, from its live state.
  #verdict(call: LimitCall, now: number, cost: number): LimitVerdict {
    return MATH[call.spec.algorithm].decide(call.spec, liveState(this.#entryOf(call), now), now, cost);
  }

  // Charges an admitted cost to one limit's state (its entry, or a new one), and moves its expiry.
  #charge(call: LimitCall, cost: number, now: number, slack: number): void {
    const entry = this.#entryOf(call);
    const spec = call.spec;
    this.#keep(call, entry, MATH[spec.algorithm].commit(spec, liveState(entry, now), now, cost), slack);
  }

  // Keeps a limit's charged state: in its entry (`entry`: what #entryOf found for `call`), or a new one.
  #keep(call: LimitCall, entry: Entry | undefined, state: unknown, slack: number): void {
    const expiresAt = MATH[call.spec.algorithm].expiresAt(call.spec, state);
    if (entry === undefined) {
      const created: Entry = { state, expiresAt, sweepAt: expiresAt + slack, owner: this, dead: false };
      this.#entries.set(call.key, created);
      call.handle = created;
      this.#sinceSweep++; // a creation counts towards the next sweep (see SWEEP_MIN)
    } else {
      entry.state = state;
      entry.expiresAt = expiresAt;
      entry.sweepAt = expiresAt + slack;
    }
  }
}

// An entry's state while it counts: a state read after its expiry decides as no state.
function liveState(entry: Entry | undefined, now: number): unknown {
  return entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
}

// An entry out of the map (swept or reset): a memo pointing at it is stale, and it lets its state
// go (memos, a limiter's key cache, may hold the entry long after).
function retire(entry: Entry): void {
  entry.dead = true;
  entry.state = undefined;
}

// Map#forEach callback of the sweep (`this` is the time): module-level, so a sweep allocates nothing.
function sweepEntry(this: number, entry: Entry, key: string, map: Map<string, Entry>): void {
  if (entry.sweepAt <= this) {
    map.delete(key);
    retire(entry);
  }
}

function allAllowed(verdicts: readonly LimitVerdict[]): boolean {
  for (let i = 0; i < verdicts.length; i++) if (!(verdicts[i] as LimitVerdict).allowed) return false;
  return true;
}

/**
 * The store's own time for a decision, checked and whole (as Redis's TIME is). A bad reading is a
 * store failure: the limiter's degraded policy decides what happens next.
 */
function storeNow(clock: Clock): number {
  try {
    return limiterTime(clock.now(), 'store clock.now()');
  } catch (err) {
    // Read before anything is decided or charged: the take took no effect.
    throw new StoreError('limiterTake', err, { outcome: 'not-applied', retriable: false });
  }
}

/** True when `key` (`{<namespace>:...}...` or `{<namespace>}...`) belongs to `namespace`. */
export function inNamespace(key: string, namespace: string): boolean {
  const open = `{${namespace}`;
  if (!key.startsWith(open)) return false;
  const next = key.charCodeAt(open.length);
  return next === 58 /* : */ || next === 125 /* } */;
}
