import { type Duration, parseDuration } from '../core/duration.js';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { type Emit, type Observer, observing } from '../core/observer.js';
import { isPlainObject, keysOf, knownKeys, positiveInt } from '../core/validate.js';

/** Options of {@link AdaptiveTimeout} (the `adaptive` option of a reorder buffer). */
export interface AdaptiveTimeoutOptions {
  /** Which quantile of recent hole fill times to follow, in (0, 1]. Default 0.99. */
  quantile?: number;
  /** The timeout is the quantile times this factor (>= 1). Default 2. */
  factor?: number;
  /** Lower clamp. Default `'10ms'`. */
  min?: Duration;
  /** Upper clamp. Default `'5s'`. */
  max?: Duration;
  /** How many recent fill times are kept (a sliding sample). Default 1000. */
  sampleSize?: number;
  /** The timeout until enough samples exist. Default `'250ms'`, clamped to [min, max]. */
  initial?: Duration;
  /**
   * Told each new timeout (`adaptive-timeout.timeout`, when a recomputation changes it): see
   * docs/observability.md. A reorder buffer passes its own `observer` on unless this is set.
   */
  observer?: Observer;
}

const ADAPTIVE_OPTIONS = keysOf<AdaptiveTimeoutOptions>({
  quantile: true,
  factor: true,
  min: true,
  max: true,
  sampleSize: true,
  initial: true,
  observer: true,
});

/** What an adaptive timeout currently does: for metrics and dashboards. */
export interface AdaptiveTimeoutStats {
  /** The timeout in force (ms). */
  readonly timeoutMs: number;
  /** The quantile of the sample behind it (ms), or `null` while the initial timeout is in force. */
  readonly quantileMs: number | null;
  /** Fill times held in the sample. */
  readonly samples: number;
  readonly quantile: number;
  readonly factor: number;
  readonly minMs: number;
  readonly maxMs: number;
}

/** The saved form of an adaptive timeout (part of a reorder buffer snapshot). */
export interface SavedAdaptiveTimeout {
  /** Fill times, oldest first. */
  readonly samples: number[];
  /** Samples recorded since the timeout was last recomputed. */
  readonly pending: number;
  readonly timeoutMs: number;
  readonly quantileMs: number | null;
}

// p99: a hole that stays open longer than 99 of the last 100 did is more likely lost than late;
// the factor 2 leaves headroom for the tail to drift between two recomputations.
const DEFAULT_QUANTILE = 0.99;
const DEFAULT_FACTOR = 2;
// 10 ms: below it a deadline is lost in timer granularity (setTimeout fires 1-4 ms late) and
// event-loop jitter, so a shorter timeout would declare holes lost that were only being scheduled.
const DEFAULT_MIN = '10ms';
// 5 s: a consumer held more than 5 s behind one missing event delays every later event by as much;
// past that, asking the compensation lane is cheaper than waiting.
const DEFAULT_MAX = '5s';
// 1000 recent holes (DESIGN §3.4): the p99 then rests on its 10 largest samples, and a change in
// the network's behaviour is followed within a thousand holes.
const DEFAULT_SAMPLE = 1000;
// 250 ms, the fixed timeout DESIGN §3.4 shows, until there is a sample to follow.
const DEFAULT_INITIAL = '250ms';
// Recompute after every 16 new samples: sorting 1000 numbers costs ~50 µs (`Float64Array.from`
// of 1000 random doubles, then `sort()`, timed over 2000 rounds), so at 16 samples per recompute a
// fill costs ~3 µs amortised; the quantile of 1000 moves little within 16 samples.
const RECOMPUTE_EVERY = 16;

/**
 * A gap timeout that follows the observed fill time of recent holes: a quantile over a sliding
 * sample, times a factor, clamped to [min, max]. Pure: fill times are passed in.
 *
 * @example
 * ```ts
 * const t = new AdaptiveTimeout({ quantile: 0.5, factor: 2, min: 1, max: 1000, initial: 100 });
 * t.timeoutMs; // 100
 * for (let i = 0; i < 16; i++) t.record(20);
 * t.timeoutMs; // 40
 * ```
 */
export class AdaptiveTimeout {
  readonly #quantile: number;
  readonly #factor: number;
  readonly #minMs: number;
  readonly #maxMs: number;
  readonly #sampleSize: number;
  readonly #initialMs: number;
  #samples: Float64Array;
  #head = 0; // index of the oldest sample
  #count = 0;
  #pending = 0;
  #timeoutMs: number;
  #quantileMs: number | null = null;
  readonly #emit: Emit | undefined;

  constructor(options: AdaptiveTimeoutOptions = {}) {
    if (!isPlainObject(options as unknown)) throw new InvalidOptionError('adaptive', 'an object', options);
    knownKeys('adaptive', options, ADAPTIVE_OPTIONS);
    this.#quantile = options.quantile ?? DEFAULT_QUANTILE;
    if (typeof this.#quantile !== 'number' || !(this.#quantile > 0 && this.#quantile <= 1)) {
      throw new InvalidOptionError('adaptive.quantile', 'a number in (0, 1]', options.quantile);
    }
    this.#factor = options.factor ?? DEFAULT_FACTOR;
    if (typeof this.#factor !== 'number' || !Number.isFinite(this.#factor) || this.#factor < 1) {
      throw new InvalidOptionError('adaptive.factor', 'a finite number >= 1', options.factor);
    }
    this.#minMs = parseDuration(options.min ?? DEFAULT_MIN, 'adaptive.min');
    this.#maxMs = parseDuration(options.max ?? DEFAULT_MAX, 'adaptive.max');
    if (this.#maxMs < this.#minMs) {
      throw new InvalidOptionError('adaptive.max', `at least adaptive.min (${this.#minMs} ms)`, options.max);
    }
    this.#sampleSize = positiveInt('adaptive.sampleSize', options.sampleSize ?? DEFAULT_SAMPLE);
    this.#initialMs = this.#clamp(parseDuration(options.initial ?? DEFAULT_INITIAL, 'adaptive.initial'));
    this.#samples = new Float64Array(this.#sampleSize);
    this.#timeoutMs = this.#initialMs;
    this.#emit = observing(options.observer, 'adaptive.observer');
  }

  /** The quantile of recent fill times the timeout follows (fixed when made, as the others). */
  get quantile(): number {
    return this.#quantile;
  }

  /** What the quantile is multiplied by. */
  get factor(): number {
    return this.#factor;
  }

  /** The lowest timeout, in ms. */
  get minMs(): number {
    return this.#minMs;
  }

  /** The highest timeout, in ms. */
  get maxMs(): number {
    return this.#maxMs;
  }

  /** How many recent fill times are kept. */
  get sampleSize(): number {
    return this.#sampleSize;
  }

  /** The timeout in force, in ms. */
  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** Records how long one hole stayed open before it was filled (ms). */
  record(fillMs: number): void {
    const ms = fillMs > 0 ? fillMs : 0;
    if (this.#count < this.#sampleSize) {
      this.#samples[(this.#head + this.#count) % this.#sampleSize] = ms;
      this.#count++;
    } else {
      this.#samples[this.#head] = ms;
      this.#head = (this.#head + 1) % this.#sampleSize;
    }
    if (++this.#pending >= RECOMPUTE_EVERY) this.#recompute();
  }

  /**
   * Records the holes of a run a reorder buffer releases, numbers `first` to `end - 1` held in
   * slots `s & mask` with their arrival times in `at`: a number was a hole from the first arrival
   * of a number above it to its own arrival (the head's definition; numbers of the run only: those
   * still buffered past its end are not scanned, so a hole's age can be under-read, never
   * over-read). Only the head's fill is seen at push time; without these, holes stuck behind a
   * lost one (a stream that loses events often) would never teach the timeout. Slots marked in
   * `recovered` (a compensator's re-requested items) teach nothing and are unmarked.
   */
  recordRun(
    at: Float64Array,
    mask: number,
    recovered: Uint8Array | undefined,
    first: number,
    end: number,
  ): void {
    let firstAbove = Number.POSITIVE_INFINITY;
    for (let s = end - 1; s >= first; s--) {
      const slot = s & mask;
      if (recovered !== undefined && recovered[slot] === 1) {
        recovered[slot] = 0;
        continue;
      }
      const filled = at[slot] as number;
      if (filled > firstAbove) this.record(filled - firstAbove);
      else firstAbove = filled;
    }
  }

  /** The current figures, for metrics. */
  stats(): AdaptiveTimeoutStats {
    return {
      timeoutMs: this.#timeoutMs,
      quantileMs: this.#quantileMs,
      samples: this.#count,
      quantile: this.#quantile,
      factor: this.#factor,
      minMs: this.#minMs,
      maxMs: this.#maxMs,
    };
  }

  /** The saved form; {@link AdaptiveTimeout.load} reads it back. */
  toJSON(): SavedAdaptiveTimeout {
    return {
      samples: this.#ordered(),
      pending: this.#pending,
      timeoutMs: this.#timeoutMs,
      quantileMs: this.#quantileMs,
    };
  }

  /** Replaces the state with a saved one (samples beyond `sampleSize` keep the newest). */
  load(saved: unknown): void {
    if (!isPlainObject(saved) || !Array.isArray(saved.samples)) {
      throw new InvalidArgumentError('saved.adaptive', 'a saved adaptive timeout', saved);
    }
    const { samples, pending, timeoutMs, quantileMs } = saved;
    for (const [i, s] of (samples as unknown[]).entries()) {
      if (typeof s !== 'number' || !(s >= 0)) {
        throw new InvalidArgumentError(`saved.adaptive.samples[${i}]`, 'a non-negative number', s);
      }
    }
    if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0)) {
      throw new InvalidArgumentError('saved.adaptive.timeoutMs', 'a non-negative number', timeoutMs);
    }
    if (quantileMs !== null && (typeof quantileMs !== 'number' || !(quantileMs >= 0))) {
      throw new InvalidArgumentError(
        'saved.adaptive.quantileMs',
        'null or a non-negative number',
        quantileMs,
      );
    }
    if (typeof pending !== 'number' || !Number.isSafeInteger(pending) || pending < 0) {
      throw new InvalidArgumentError('saved.adaptive.pending', 'a non-negative integer', pending);
    }
    const kept = (samples as number[]).slice(-this.#sampleSize);
    this.#samples = new Float64Array(this.#sampleSize);
    this.#samples.set(kept);
    this.#head = 0;
    this.#count = kept.length;
    this.#pending = pending;
    this.#timeoutMs = this.#clamp(timeoutMs);
    this.#quantileMs = quantileMs;
  }

  #ordered(): number[] {
    const out = new Array<number>(this.#count);
    for (let i = 0; i < this.#count; i++)
      out[i] = this.#samples[(this.#head + i) % this.#sampleSize] as number;
    return out;
  }

  #recompute(): void {
    this.#pending = 0;
    const sorted = Float64Array.from(this.#ordered()).sort();
    // Nearest rank: the smallest sample with at least `quantile` of the sample at or below it.
    const rank = Math.max(1, Math.ceil(this.#quantile * sorted.length));
    const q = sorted[rank - 1] as number;
    this.#quantileMs = q;
    const before = this.#timeoutMs;
    this.#timeoutMs = this.#clamp(Math.ceil(q * this.#factor));
    if (this.#emit !== undefined && this.#timeoutMs !== before) {
      this.#emit({ part: 'adaptive-timeout', type: 'timeout', timeoutMs: this.#timeoutMs });
    }
  }

  #clamp(ms: number): number {
    return Math.min(this.#maxMs, Math.max(this.#minMs, ms));
  }
}
