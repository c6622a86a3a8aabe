import type { Clock } from '../../core/clock.js';
import { StoreError } from '../../core/errors.js';
import { MATH, specSuffix } from '../../windows/limits/algorithms.js';
import { limiterCost } from '../../windows/limits/cost.js';
import { checkSpec } from '../../windows/limits/spec.js';
import { CLIENT_STATE_SLACK_MS, limiterTime, STATE_SLACK_MS } from '../../windows/limits/time.js';
import type { LimitSpec, LimitVerdict } from '../../windows/limits/types.js';
import { verdict as verdictOf } from '../../windows/limits/verdict.js';
import type {
  LimitCall,
  LimiterAdjustCommand,
  LimiterAdjustReply,
  LimiterDeleteCommand,
  LimiterTakeCommand,
  LimiterTakeReply,
} from '../limiter.js';
import { type AdjustEntry, adjustStates, blockOf, liveState } from './limiter-adjust.js';

/** A limit's state in the map (with `state`, `expiresAt` and `blockedUntil`: see AdjustEntry). */
interface Entry extends AdjustEntry {
  /** When the sweep may drop it: `expiresAt` plus the stores' slack (see time.ts), as Redis's TTL. */
  sweepAt: number;
  /** The namespace it belongs to: a reset drops it, and a memo found for a call of another is ignored. */
  readonly ns: string;
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

// Specs checked, each object once (the limiter's own were checked by toSpec; a direct caller's may not be).
const checkedSpecs = new WeakSet<LimitSpec>();

/**
 * The limiter side of the memory store: limiter state in a Map, one synchronous block per decision
 * (atomic by construction); the reference model every other store is tested against.
 *
 * A class, not closures: V8 inlines its prototype methods into the optimised code of their
 * callers, and a prototype method lives as long as the module. Closures made per backend are
 * inlined as objects of that backend: once a backend is collected, every caller optimised with it
 * is thrown away and recompiled (with closures, a fresh memory limiter per run after a GC takes
 * ~1.5x longer per take: `node --expose-gc scripts/limiter-memory-ab.mjs`, a dist of each form).
 */
export class MemoryLimiterBackend {
  readonly #clock: Clock;
  readonly #entries = new Map<string, Entry>();
  // Each call's entry, found once and then reached from the call (a hot subject's take builds no
  // key and does no Map lookup: the limiter keeps its calls per subject). Weak: a call the
  // limiter drops takes its memo with it.
  readonly #memo = new WeakMap<LimitCall, Entry>();
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

  /**
   * One multi-limit decision, answered as a store reply, synchronously (a malformed command or a
   * broken clock throws, having decided and charged nothing).
   */
  take({ namespace, limits, cost, now: given }: LimiterTakeCommand): LimiterTakeReply {
    const now = this.#timeOf(given);
    limiterCost(cost);
    this.#sweepWhenDue(now);
    if (limits.length === 1 && !(limits[0] as LimitCall).spec.blockMs) {
      // One limit has no other to ask: the entry is found once and its live state read once, for
      // the verdict and the charge (no second pass, no list of its own).
      const call = limits[0] as LimitCall;
      const entry = this.#entryOf(namespace, call, 'limits[0].spec');
      const spec = call.spec;
      const math = MATH[spec.algorithm];
      const state = liveState(entry, now);
      const verdict = math.decide(spec, state, now, cost);
      if (verdict.allowed && cost > 0) {
        this.#keep(namespace, call, entry, math.commit(spec, state, now, cost), this.#slackOf(given));
      }
      return { now, allowed: verdict.allowed, verdicts: [verdict] };
    }
    const verdicts = this.#settle(namespace, limits, cost, now, this.#slackOf(given));
    return { now, allowed: allAllowed(verdicts), verdicts };
  }

  /** Drops every state of `namespace`; returns how many. */
  reset(namespace: string): number {
    let n = 0;
    for (const [key, entry] of this.#entries) {
      if (entry.ns === namespace) {
        this.#entries.delete(key);
        retire(entry);
        n++;
      }
    }
    return n;
  }

  /** Drops these limits' states; returns how many there were (live or not yet swept). */
  delete({ namespace, limits }: LimiterDeleteCommand): number {
    let n = 0;
    for (const call of limits) {
      const key = stateKey(namespace, call);
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

  // The entry of a call: its memo when valid (the common case: a hot subject, whose call the
  // limiter keeps), else #lookup. Kept this short so it is inlined into every take.
  #entryOf(namespace: string, call: LimitCall, path: string): Entry | undefined {
    const memo = this.#memo.get(call);
    return memo !== undefined && memo.ns === namespace && !memo.dead
      ? memo
      : this.#lookup(namespace, call, path);
  }

  // A call not seen (or whose entry is gone): its spec checked the first time (`path` names it in
  // the error: a direct caller's may be malformed), its entry found in the map by the key built
  // from it, and remembered for the call.
  #lookup(namespace: string, call: LimitCall, path: string): Entry | undefined {
    const spec = call.spec;
    if (!checkedSpecs.has(spec)) {
      checkSpec(spec, path);
      checkedSpecs.add(spec);
    }
    const entry = this.#entries.get(stateKey(namespace, call));
    if (entry !== undefined) this.#memo.set(call, entry);
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
  #settle(
    namespace: string,
    limits: readonly LimitCall[],
    cost: number,
    now: number,
    slack: number,
  ): LimitVerdict[] {
    const verdicts: LimitVerdict[] = new Array(limits.length);
    let allowed = true;
    let blocking = false;
    for (let i = 0; i < limits.length; i++) {
      const call = limits[i] as LimitCall;
      const entry = this.#entryOf(namespace, call, `limits[${i}].spec`);
      const until = call.spec.blockMs ? blockOf(entry, now) : 0;
      if (call.spec.blockMs) blocking = true;
      const verdict =
        until > 0
          ? // Blocked: refused until the block ends, whatever the state holds.
            verdictOf(call.spec, false, 0, until, until - now)
          : MATH[call.spec.algorithm].decide(call.spec, liveState(entry, now), now, cost);
      verdicts[i] = verdict;
      if (!verdict.allowed) allowed = false;
    }
    if (!allowed && blocking) this.#block(namespace, limits, verdicts, now, slack);
    if (!allowed) {
      // Nothing is charged: a limit that would have admitted reports itself as it is now (its
      // answer to a cost of 0), not as it would have been after this request.
      for (let i = 0; i < limits.length; i++) {
        if (!(verdicts[i] as LimitVerdict).allowed) continue;
        const call = limits[i] as LimitCall;
        const entry = this.#entryOf(namespace, call, `limits[${i}].spec`);
        verdicts[i] = MATH[call.spec.algorithm].decide(call.spec, liveState(entry, now), now, 0);
      }
    } else if (cost > 0) {
      for (let i = 0; i < limits.length; i++) {
        this.#charge(namespace, limits[i] as LimitCall, cost, now, slack);
      }
    }
    return verdicts;
  }

  // A refusal blocks each refusing limit with `blockMs` that was not blocked already, unless it
  // can never pass (a cost above the limit blocks nothing: no wait would help it). Its verdict
  // then names the block's end.
  #block(
    namespace: string,
    limits: readonly LimitCall[],
    verdicts: LimitVerdict[],
    now: number,
    slack: number,
  ): void {
    for (let i = 0; i < limits.length; i++) {
      const call = limits[i] as LimitCall;
      const ms = call.spec.blockMs;
      const v = verdicts[i] as LimitVerdict;
      if (!ms || v.allowed || v.retryAfterMs === Number.POSITIVE_INFINITY) continue;
      const entry = this.#entryOf(namespace, call, `limits[${i}].spec`);
      if (blockOf(entry, now) > 0) continue;
      const until = now + ms;
      this.#setBlock(namespace, call, entry, until, slack);
      verdicts[i] = verdictOf(
        call.spec,
        false,
        v.remaining,
        Math.max(v.resetAt, until),
        Math.max(v.retryAfterMs, ms),
      );
    }
  }

  // Sets (until > 0) or lifts a limit's block, in its entry or a new one.
  #setBlock(
    namespace: string,
    call: LimitCall,
    entry: Entry | undefined,
    until: number,
    slack: number,
  ): void {
    if (entry === undefined) {
      if (until === 0) return;
      this.#create(namespace, call, undefined, 0, until, slack);
      return;
    }
    entry.blockedUntil = until;
    entry.sweepAt = Math.max(entry.expiresAt, until) + slack;
  }

  /**
   * One state operation (see LimiterAdjustCommand), synchronously: a malformed command throws
   * having changed nothing; so does a penalty that would pass the usage cap.
   */
  adjust(command: LimiterAdjustCommand): LimiterAdjustReply {
    const { namespace, now: given } = command;
    const slack = this.#slackOf(given);
    return adjustStates(command, {
      now: () => this.#timeOf(given),
      entry: (call, i) => this.#entryOf(namespace, call, `limits[${i}].spec`),
      keep: (call, entry, state) => this.#keep(namespace, call, entry as Entry | undefined, state, slack),
      setBlock: (call, entry, until) =>
        this.#setBlock(namespace, call, entry as Entry | undefined, until, slack),
      drop: (call, entry) => {
        this.#entries.delete(stateKey(namespace, call));
        retire(entry as Entry);
      },
    });
  }

  // Charges an admitted cost to one limit's state (its entry, or a new one), and moves its expiry.
  #charge(namespace: string, call: LimitCall, cost: number, now: number, slack: number): void {
    const entry = this.#entryOf(namespace, call, 'limits[].spec');
    const spec = call.spec;
    this.#keep(
      namespace,
      call,
      entry,
      MATH[spec.algorithm].commit(spec, liveState(entry, now), now, cost),
      slack,
    );
  }

  // Keeps a limit's charged state: in its entry (`entry`: what #entryOf found for `call`), or a new one.
  #keep(namespace: string, call: LimitCall, entry: Entry | undefined, state: unknown, slack: number): void {
    const expiresAt = MATH[call.spec.algorithm].expiresAt(call.spec, state);
    if (entry === undefined) {
      this.#create(namespace, call, state, expiresAt, 0, slack);
    } else {
      entry.state = state;
      entry.expiresAt = expiresAt;
      entry.sweepAt = Math.max(expiresAt, entry.blockedUntil) + slack;
    }
  }

  #create(
    namespace: string,
    call: LimitCall,
    state: unknown,
    expiresAt: number,
    blockedUntil: number,
    slack: number,
  ): void {
    const sweepAt = Math.max(expiresAt, blockedUntil) + slack;
    const created: Entry = { state, blockedUntil, expiresAt, sweepAt, ns: namespace, dead: false };
    this.#entries.set(stateKey(namespace, call), created);
    this.#memo.set(call, created);
    this.#sinceSweep++; // a creation counts towards the next sweep (see SWEEP_MIN)
  }
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

/**
 * The map key of a call's state: namespace, `by` (when given), subject, limit id and shape
 * (specSuffix), each of the first four preceded by its length, so no two calls of different
 * identities share a key whatever characters their parts hold.
 */
function stateKey(namespace: string, { spec, subject, by }: LimitCall): string {
  const byPart = by === undefined ? '-' : `${by.length}:${by}`;
  return `${namespace.length}:${namespace}${byPart}${subject.length}:${subject}${spec.id.length}:${spec.id}${specSuffix(spec)}`;
}
