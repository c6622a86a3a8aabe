// The public types of the reorder buffer (src/windows/reorder-buffer.ts), apart from its code.
import type { Clock } from '../core/clock.js';
import type { Duration } from '../core/duration.js';
import type { Observer } from '../core/observer.js';
import type { AdaptiveTimeout, AdaptiveTimeoutOptions, AdaptiveTimeoutStats } from './adaptive-timeout.js';

/**
 * One item let out of a reorder buffer, in sequence order. `Late` narrows `late`: a push's
 * result types its releases `Release<T, false>` (in order) or `Release<T, true>` (`'late'`).
 */
export interface Release<T, Late extends boolean = boolean> {
  readonly seq: number;
  readonly item: T;
  /** True for a sequence number that had been given up on (reported in a gap) and came after all. */
  readonly late: Late;
}

/** A range of sequence numbers given up on, both ends included. */
export interface GapRange {
  readonly from: number;
  readonly to: number;
}

/**
 * What {@link ReorderBuffer.push} decided:
 * - `released`: it was the next number; it and the contiguous buffered run after it are released.
 * - `buffered`: held until the numbers before it come (or their gap times out).
 * - `late`: a number reported missing came after all: released once, flagged `late`.
 * - `duplicate`: seen before (buffered, released, or released late): never released twice.
 * - `stale`: below `next`, not in the missing set, and at or below the highest number the bounded
 *   missing set forgot: it may be a missing number that came very late, or a repeat. Not released:
 *   it goes to the caller for reconciliation, so the buffer fails safe (as a window's horizon does).
 * - `rejected`: beyond the buffer's capacity with `overflow: 'reject'`; nothing changed.
 */
export type PushOutcome = 'released' | 'buffered' | 'late' | 'duplicate' | 'stale' | 'rejected';

/**
 * The releases of one push, in order (an array, so `for (const r of buffer.push(...))` works), with
 * the push's `outcome` and the `gaps` an overflow with `overflow: 'advance'` gave up on. A union
 * on `outcome`:
 * - `released`: at least one release (the pushed item, after any run an overflow released
 *   first), none of them late; gaps when an overflow advanced.
 * - `buffered`, `duplicate`: releases and gaps only when an overflow advanced first; none late.
 * - `late`: exactly the pushed item (`length` is `1`), `late: true`; no gaps.
 * - `stale`, `rejected`: nothing released (`length` is `0`), no gaps.
 *
 * Every member is an array type, none a tuple: TypeScript drops `undefined` from `r[0]` on a
 * union that mixes tuples and arrays, even under `noUncheckedIndexedAccess`, so `r[0]` on an
 * unnarrowed result would type as always present.
 */
export type PushResult<T> =
  | (ReadonlyArray<Release<T, false>> & {
      readonly outcome: 'released' | 'buffered' | 'duplicate';
      readonly gaps: readonly GapRange[];
    })
  | (ReadonlyArray<Release<T, true>> & {
      readonly outcome: 'late';
      readonly length: 1;
      readonly gaps: readonly [];
    })
  | (ReadonlyArray<never> & {
      readonly outcome: 'stale' | 'rejected';
      readonly length: 0;
      readonly gaps: readonly [];
    });

/** What {@link ReorderBuffer.tick} let out: released items (none late) and the gaps force-advanced over. */
export interface TickResult<T> {
  readonly released: Release<T, false>[];
  readonly gaps: GapRange[];
}

/** Options of {@link ReorderBuffer}. */
export interface ReorderBufferOptions {
  /** The first sequence number expected. Default 0. */
  next?: number;
  /**
   * The window: numbers in `[next, next + capacity)` are accepted. Derive it from the source's
   * largest displacement (how far ahead of a number its successors can arrive) and write it down.
   */
  capacity: number;
  /** How long a hole may stay open before it is force-advanced, or `'adaptive'`. */
  gapTimeout: Duration | 'adaptive';
  /** Tuning of `gapTimeout: 'adaptive'`. */
  adaptive?: AdaptiveTimeoutOptions;
  /**
   * A number at or beyond `next + capacity`: `'advance'` (default) gives up the oldest holes until
   * it fits (they are reported as gaps and become missing), `'reject'` answers `rejected`.
   */
  overflow?: 'advance' | 'reject';
  /**
   * How many missing numbers are remembered for late arrival. Beyond it the oldest are forgotten
   * one at a time; a forgotten number that comes answers `stale`. Default 65 536.
   */
  maxMissing?: number;
  /**
   * Time when `push`/`tick` get no `now`. Default: the wall clock anchored once and advanced by the
   * monotonic clock (`anchoredClock()`): an NTP step back would freeze every hole's age (time
   * never moves back inside a buffer), a step forward would time them all out at once.
   */
  clock?: Clock;
  /**
   * Told every push (`reorder.push`: its outcome, releases and the fill after it) and every gap
   * given up on (`reorder.gap`, by timeout or overflow); an adaptive gap timeout reports its new
   * values to it too. See docs/observability.md. None by default: an unobserved buffer's push is
   * the class's own, untouched.
   */
  observer?: Observer;
}

/** Figures for metrics. */
export interface ReorderStats {
  readonly next: number;
  readonly buffered: number;
  readonly missing: number;
  readonly timeoutMs: number;
  readonly adaptive?: AdaptiveTimeoutStats;
}

/** The saved state of a reorder buffer (format `onceflow.reorder.v1`); JSON when the items are. */
export interface SavedReorderBuffer<T> {
  readonly format: 'onceflow.reorder.v1';
  readonly next: number;
  /** Buffered items: `[seq, item, arrivedAt]`, by sequence number. */
  readonly buffered: [seq: number, item: T, at: number][];
  /** Missing ranges: `[from, to, openedAt]`, ascending. */
  readonly missing: [from: number, to: number, openedAt: number][];
  /** The highest number the missing set forgot, or `null`. */
  readonly missingHorizon: number | null;
  /** The latest time seen (time never moves back inside a buffer), or `null`. */
  readonly lastNow: number | null;
  readonly adaptive: ReturnType<AdaptiveTimeout['toJSON']> | null;
}
