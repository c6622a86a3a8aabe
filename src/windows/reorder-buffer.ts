import type { Clock } from '../core/clock.js';
import { InvalidArgumentError } from '../core/errors.js';
import type { Emit } from '../core/observer.js';
import { pinShapes } from '../core/pin-shapes.js';
import { AdaptiveTimeout, type AdaptiveTimeoutOptions } from './adaptive-timeout.js';
import { MissingSet } from './missing-set.js';
import { observedPush } from './reorder-observe.js';
import { resolveReorderOptions } from './reorder-options.js';
import { pinnedBuffers } from './reorder-pin.js';
import { BUFFERED, DUPLICATE, NO_GAPS, REJECTED, result, STALE } from './reorder-result.js';
import { SNAPSHOT_FORMAT, validateSaved } from './reorder-snapshot.js';
import type {
  GapRange,
  PushOutcome,
  PushResult,
  Release,
  ReorderBufferOptions,
  ReorderStats,
  SavedReorderBuffer,
  TickResult,
} from './reorder-types.js';

export type * from './reorder-types.js';

// Marks an empty slot: no item a caller passes can be this object.
const EMPTY: unknown = Object.freeze({ empty: true });

/**
 * Puts the events of one single-writer sequence back in order (DESIGN §3.4). Pure: no timers, no
 * I/O; time is passed in (or read from `clock`), and a gap is force-advanced only by {@link tick}.
 *
 * - `seq == next`: released with every contiguous buffered item after it.
 * - `next < seq < next + capacity`: buffered (twice → `duplicate`).
 * - `seq >= next + capacity`: `overflow` decides (`'advance'` gives up the oldest holes).
 * - A hole open longer than the gap timeout (from the arrival of the first item behind it) is
 *   force-advanced by `tick`: its numbers become missing and are reported as one gap range.
 * - `seq < next`: released once with `late: true` iff it is missing; otherwise `duplicate`.
 *
 * Sequence numbers only order the events of their single writer (DESIGN §1 principle 5): one
 * buffer per partition, per connection, per table — never one across writers.
 *
 * @example
 * ```ts
 * const buffer = new ReorderBuffer<string>({ next: 1, capacity: 64, gapTimeout: '250ms' });
 * buffer.push(2, 'b', 0).outcome; // 'buffered'
 * buffer.push(1, 'a', 10).map((r) => r.item); // ['a', 'b']
 * buffer.push(4, 'd', 20).outcome; // 'buffered'
 * buffer.tick(300).gaps; // [{ from: 3, to: 3 }]
 * buffer.push(3, 'c', 400).map((r) => [r.item, r.late]); // [['c', true]]
 * buffer.push(3, 'c', 500).outcome; // 'duplicate'
 * ```
 */
export class ReorderBuffer<T> {
  readonly #capacity: number;
  readonly #overflow: 'advance' | 'reject';
  readonly #maxMissing: number;
  readonly #fixedTimeoutMs: number;
  #adaptive: AdaptiveTimeout | undefined;
  readonly #adaptiveOptions: AdaptiveTimeoutOptions;
  // False during pushRecovered: the fill it makes teaches the adaptive timeout nothing.
  #learn = true;
  // Slots holding a recovered item (made on the first one an adaptive buffer holds; cleared as
  // runs are released): #sampleRun neither learns from them nor ages holes from them.
  #recovered: Uint8Array | undefined;
  readonly #clock: Clock;
  #next: number;
  // Slot i holds the number s with (s & mask) == i, for s in (next, next + capacity); the slot count
  // is the power of two at or above capacity, so a slot is a mask, not a division. `&` reads the low
  // 32 bits of a safe integer exactly, and the mask is below 2^31, so large numbers map correctly.
  readonly #mask: number;
  // A slot holds its item, or EMPTY: one array instead of items plus flags (one load per check).
  #items: unknown[];
  #at: Float64Array;
  #buffered = 0;
  // When the hole at `next` became known: the earliest arrival among buffered items. Kept as a
  // value while items only arrive (times never decrease, so a new item cannot lower it); after a
  // release it is recomputed from the slots' arrival times, lazily, when a deadline is asked for.
  #since = 0;
  #sinceDirty = false;
  readonly #missing: MissingSet;
  #lastNow = Number.NEGATIVE_INFINITY;
  readonly #emit: Emit | undefined;

  constructor(options: ReorderBufferOptions) {
    pinShapes(ReorderBuffer, pinBuffers);
    const config = resolveReorderOptions(options);
    this.#capacity = config.capacity;
    this.#next = config.next;
    this.#overflow = config.overflow;
    this.#maxMissing = config.maxMissing;
    this.#missing = new MissingSet(config.maxMissing);
    this.#clock = config.clock;
    this.#adaptiveOptions = config.adaptiveOptions;
    this.#fixedTimeoutMs = config.fixedTimeoutMs;
    this.#adaptive = config.adaptive;
    const slots = 2 ** Math.ceil(Math.log2(this.#capacity));
    this.#mask = slots - 1;
    this.#items = new Array<unknown>(slots).fill(EMPTY);
    this.#at = new Float64Array(slots);
    this.#emit = config.emit;
    // Observed: this buffer's own push reports each result. An unobserved buffer keeps the
    // class's push as it is, so its hot path does not even test for an observer.
    if (config.emit !== undefined) {
      this.push = observedPush(this, ReorderBuffer.prototype.push, config.emit, () => this.#missing.count);
    }
  }

  /** Sequence numbers held ahead of `next` at most (private behind getters: fixed when made). */
  get capacity(): number {
    return this.#capacity;
  }

  /** What a push beyond `next + capacity` does. */
  get overflow(): 'advance' | 'reject' {
    return this.#overflow;
  }

  /** Missing numbers remembered at most. */
  get maxMissing(): number {
    return this.#maxMissing;
  }

  /** The next sequence number expected. */
  get next(): number {
    return this.#next;
  }

  /** How many items are held. */
  get buffered(): number {
    return this.#buffered;
  }

  /** The gap timeout in force (ms): fixed, or the adaptive one. */
  get timeoutMs(): number {
    return this.#adaptive === undefined ? this.#fixedTimeoutMs : this.#adaptive.timeoutMs;
  }

  /** When the open hole at `next` times out (ms), or `undefined` when nothing is buffered. */
  get deadline(): number | undefined {
    const since = this.#holeSince();
    return since === undefined ? undefined : since + this.timeoutMs;
  }

  /** Figures for metrics: position, fill, missing count, the timeout (and its adaptive state). */
  stats(): ReorderStats {
    const base = {
      next: this.#next,
      buffered: this.#buffered,
      missing: this.#missing.count,
      timeoutMs: this.timeoutMs,
    };
    return this.#adaptive === undefined ? base : { ...base, adaptive: this.#adaptive.stats() };
  }

  /** The missing ranges (reported in gaps, not come yet), ascending. */
  missing(): GapRange[] {
    return this.#missing.ranges();
  }

  /**
   * {@link push} for an item a compensator re-requested: its arrival says how long the
   * compensation took, not how long the stream held it, so an adaptive timeout does not learn
   * from it (it would learn its own output: every compensated loss fills at timeout + round trip,
   * and with more than 1% of holes lost the p99 would climb to `max`). Released as any other.
   */
  pushRecovered(seq: number, item: T, now?: number): PushResult<T> {
    // A flag, not a fourth argument of push: a parameter more makes every push ~20% slower in V8
    // (`node bench/run.mjs ordering`, with the flag passed as a parameter), and push calls no user
    // code, so the flag cannot leak into another call.
    this.#learn = false;
    try {
      const result = this.push(seq, item, now);
      // Held above the head: marked, so the run it is released in does not learn from it either.
      if (result.outcome === 'buffered' && this.#adaptive !== undefined) {
        (this.#recovered ??= new Uint8Array(this.#items.length))[seq & this.#mask] = 1;
      }
      return result;
    } finally {
      this.#learn = true;
    }
  }

  /** Accepts one item; see {@link PushOutcome}. `now` defaults to the clock. */
  push(seq: number, item: T, now?: number): PushResult<T> {
    // The type first: `seq - next` throws a raw TypeError for a bigint or a symbol, and calls an
    // object's valueOf. NaN for anything not a number fails the window test below, and the
    // check after it refuses it with a typed error before any state changes.
    const ahead = typeof seq === 'number' ? seq - this.#next : Number.NaN;
    // A number at most 2^53 - 1 whose offset from `next` (a safe integer) is an integer in
    // (0, capacity) is a safe integer: the same test as Number.isSafeInteger, without the call.
    if (ahead > 0 && ahead < this.#capacity && (ahead | 0) === ahead && seq <= Number.MAX_SAFE_INTEGER) {
      // Inside the window, behind a hole: the most common case of a disordered stream, first.
      // The common `now`: a number not behind the latest time seen (else #time decides and checks).
      const t =
        typeof now === 'number' && now >= this.#lastNow && now - now === 0 // finite: not ±Infinity or NaN
          ? (this.#lastNow = now)
          : this.#time(now);
      const slot = seq & this.#mask;
      const items = this.#items;
      if (items[slot] !== EMPTY) return DUPLICATE;
      items[slot] = item;
      this.#at[slot] = t;
      if (this.#buffered++ === 0) {
        this.#since = t;
        this.#sinceDirty = false;
      }
      return BUFFERED;
    }
    if (!Number.isSafeInteger(seq) || seq < 0) {
      throw new InvalidArgumentError('seq', 'a non-negative safe integer', seq);
    }
    const t = this.#time(now);
    const next = this.#next;
    if (seq === next && this.#buffered === 0) {
      // The common case of an ordered stream: nothing held, the number expected. No slot is touched.
      this.#next = next + 1;
      return result([{ seq, item, late: false }], 'released', NO_GAPS);
    }
    const learn = this.#learn;
    if (seq < next) return this.#pushBelow(seq, item, t, learn);
    let gaps = NO_GAPS;
    let out: Release<T, false>[] | undefined;
    if (seq - next >= this.#capacity) {
      if (this.#overflow === 'reject') return REJECTED;
      out = [];
      gaps = this.#advanceTo(seq - this.#capacity + 1, out, this.#holeSince() ?? t);
    }
    if (seq === this.#next) {
      if (this.#buffered > 0 && this.#adaptive !== undefined && learn) {
        this.#adaptive.record(t - (this.#holeSince() as number));
      }
      if (out !== undefined) {
        out.push({ seq, item, late: false });
        this.#next = seq + 1;
        this.#releaseRun(out);
        return result(out, 'released', gaps);
      }
      // The hole at `next` is filled: this item and the run behind it go out in one array sized
      // up front (growing it push by push costs more than the run itself; releasing it through
      // #releaseRun, which grows a one-item array once, makes a push ~20% slower:
      // `node bench/run.mjs ordering`, with the run released through #releaseRun).
      const items = this.#items;
      const mask = this.#mask;
      let end = seq + 1;
      while (items[end & mask] !== EMPTY) end++;
      const run = new Array<Release<T>>(end - seq);
      run[0] = { seq, item, late: false };
      for (let s = seq + 1; s < end; s++) {
        const slot = s & mask;
        run[s - seq] = { seq: s, item: items[slot] as T, late: false };
        items[slot] = EMPTY;
      }
      if (end > seq + 1) {
        this.#buffered -= end - seq - 1;
        this.#sinceDirty = true;
        if (this.#adaptive !== undefined) this.#sampleRun(seq + 1, end);
      }
      this.#next = end;
      return result(run, 'released', gaps);
    }
    const slot = seq & this.#mask;
    if (this.#items[slot] !== EMPTY) return out === undefined ? DUPLICATE : result(out, 'duplicate', gaps);
    this.#items[slot] = item;
    this.#at[slot] = t;
    if (this.#buffered++ === 0) {
      this.#since = t;
      this.#sinceDirty = false;
    }
    return out === undefined ? BUFFERED : result(out, 'buffered', gaps);
  }

  /**
   * Force-advances every hole open at least the gap timeout at `now`: its numbers become missing
   * and are reported as gap ranges, and the runs behind them are released.
   */
  tick(now?: number): TickResult<T> {
    const t = this.#time(now);
    const released: Release<T, false>[] = [];
    const gaps: GapRange[] = [];
    for (;;) {
      const since = this.#holeSince();
      if (since === undefined || t - since < this.timeoutMs) break;
      let first = this.#next + 1;
      while (this.#items[first & this.#mask] === EMPTY) first++;
      gaps.push(this.#missing.add(this.#next, first - 1, since));
      this.#next = first;
      this.#releaseRun(released);
    }
    const emit = this.#emit;
    if (emit !== undefined) {
      for (const g of gaps) emit({ part: 'reorder', type: 'gap', from: g.from, to: g.to, cause: 'timeout' });
    }
    return { released, gaps };
  }

  /** The state as a plain object (JSON when the items are); {@link restore} reads it back. */
  snapshot(): SavedReorderBuffer<T> {
    const buffered: [number, T, number][] = [];
    for (let s = this.#next + 1; buffered.length < this.#buffered; s++) {
      const slot = s & this.#mask;
      if (this.#items[slot] !== EMPTY) buffered.push([s, this.#items[slot] as T, this.#at[slot] as number]);
    }
    return {
      format: SNAPSHOT_FORMAT,
      next: this.#next,
      buffered,
      missing: this.#missing.toJSON(),
      missingHorizon: this.#missing.horizon ?? null,
      lastNow: Number.isFinite(this.#lastNow) ? this.#lastNow : null,
      adaptive: this.#adaptive?.toJSON() ?? null,
    };
  }

  /** Replaces the whole state with a {@link snapshot} (of a buffer with a capacity that fits it). */
  restore(saved: SavedReorderBuffer<T>): void {
    const s = validateSaved<T>(saved, this.#capacity);
    // The gap timeout may have changed between the save and this run (fixed <-> 'adaptive'): the
    // configured one applies. An adaptive buffer takes the saved sample when there is one, and
    // starts a fresh one otherwise; a fixed one has no use for a saved sample.
    if (this.#adaptive !== undefined) {
      // Checked before anything changes (load validates); a save without a sample starts afresh.
      const adaptive = new AdaptiveTimeout(this.#adaptiveOptions);
      if (s.adaptive !== null) adaptive.load(s.adaptive);
      this.#adaptive = adaptive;
    }
    this.#next = s.next;
    this.#items.fill(EMPTY);
    this.#recovered = undefined;
    this.#buffered = 0;
    for (const [seq, item, at] of s.buffered) {
      const slot = seq & this.#mask;
      this.#items[slot] = item;
      this.#at[slot] = at;
      this.#buffered++;
    }
    this.#sinceDirty = true;
    this.#missing.load(s.missing, s.missingHorizon ?? undefined);
    this.#lastNow = s.lastNow ?? Number.NEGATIVE_INFINITY;
  }

  #time(now: number | undefined): number {
    const t = now === undefined ? this.#clock.now() : now;
    if (typeof t !== 'number' || !Number.isFinite(t))
      throw new InvalidArgumentError('now', 'a finite number', t);
    // Time never moves back inside a buffer: a stepped-back clock must not reopen a hole's age.
    if (t > this.#lastNow) this.#lastNow = t;
    return this.#lastNow;
  }

  /** Arrival time of the earliest-arrived buffered item: when the hole at `next` became known. */
  #holeSince(): number | undefined {
    if (this.#buffered === 0) return undefined;
    if (this.#sinceDirty) {
      let min = Number.POSITIVE_INFINITY;
      let found = 0;
      for (let s = this.#next + 1; found < this.#buffered; s++) {
        const slot = s & this.#mask;
        if (this.#items[slot] !== EMPTY) {
          found++;
          const at = this.#at[slot] as number;
          if (at < min) min = at;
        }
      }
      this.#since = min;
      this.#sinceDirty = false;
    }
    return this.#since;
  }

  #pushBelow(seq: number, item: T, t: number, learn: boolean): PushResult<T> {
    const openedAt = this.#missing.take(seq);
    if (openedAt === undefined) {
      const horizon = this.#missing.horizon;
      return horizon !== undefined && seq <= horizon ? STALE : DUPLICATE;
    }
    if (learn) this.#adaptive?.record(t - openedAt);
    return result([{ seq, item, late: true }], 'late', NO_GAPS);
  }

  /** Moves `next` up to `target`: buffered items on the way are released, holes become missing. */
  #advanceTo(target: number, out: Release<T, false>[], openedAt: number): GapRange[] {
    const gaps: GapRange[] = [];
    while (this.#next < target) {
      const s = this.#next;
      if (this.#items[s & this.#mask] !== EMPTY) {
        this.#releaseRun(out);
        continue;
      }
      // A hole: it runs to the next buffered item, or (nothing buffered) straight to the target.
      let end = s + 1;
      if (this.#buffered === 0) end = target;
      else while (end < target && this.#items[end & this.#mask] === EMPTY) end++;
      gaps.push(this.#missing.add(s, end - 1, openedAt));
      this.#next = end;
    }
    this.#releaseRun(out);
    return gaps;
  }

  /** Releases the contiguous buffered run starting at `next`. */
  #releaseRun(out: Release<T, false>[]): void {
    const first = this.#next;
    const mask = this.#mask;
    const items = this.#items;
    let end = first;
    while (items[end & mask] !== EMPTY) end++;
    if (end === first) return;
    // Counted first, then written by index: growing `out` push by push costs more than the run.
    let k = out.length;
    out.length = k + (end - first);
    for (let s = first; s < end; s++) {
      const slot = s & mask;
      out[k++] = { seq: s, item: items[slot] as T, late: false };
      items[slot] = EMPTY;
    }
    if (this.#adaptive !== undefined) this.#sampleRun(first, end);
    const s = end;
    this.#buffered -= s - this.#next;
    if (s !== this.#next) this.#sinceDirty = true;
    this.#next = s;
  }

  // Done per released run, and only when adaptive, so a buffered item's push does no sampling work.
  #sampleRun(first: number, end: number): void {
    (this.#adaptive as AdaptiveTimeout).recordRun(this.#at, this.#mask, this.#recovered, first, end);
  }
}

// The buffers and results whose shapes a ReorderBuffer keeps alive (see reorder-pin.ts), made by
// this class: module-level, so a constructor call allocates no closure.
const pinBuffers = () => pinnedBuffers(ReorderBuffer);
