import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import { BloomFilter, bloomHashes, type SavedBloomFilter } from './bloom-filter.js';

/** Options of {@link SeenFilter}. */
export interface SeenFilterOptions {
  /**
   * New ids per generation: an id added is remembered while about this many other new ids are
   * added after it (up to twice as many; surely while {@link SeenFilter.span} are). Size it from
   * the span your repeats arrive within, like a window's capacity (DESIGN §3.2): a repeat that
   * comes later than that only loses the skipped read, never its dedup.
   */
  expected: number;
  /**
   * Each generation's false-positive rate when full, in [1e-9, 0.5]. Default 0.01. A generation is
   * full when as many of its bits are set as `expected` ids set on average, so the pair answers
   * "maybe seen" for a never-seen id at most 1 - (1 - p)^2 (< 2p) of the time: one store read each.
   */
  falsePositiveRate?: number;
}

/** A {@link SeenFilter} as plain JSON (`toJSON`, `SeenFilter.from`): both generations. */
export interface SavedSeenFilter {
  readonly version: 1;
  readonly current: SavedBloomFilter;
  readonly previous: SavedBloomFilter;
}

/** The two generations SeenFilter.from restored, handed to the constructor (module-internal). */
class Restored {
  constructor(
    readonly current: BloomFilter,
    readonly previous: BloomFilter,
  ) {}
}

const OPTIONS = keysOf<SeenFilterOptions>({ expected: true, falsePositiveRate: true });
const SAVED_KEYS = keysOf<SavedSeenFilter>({ version: true, current: true, previous: true });

// One key's two hashes, reused by every call: both generations share one sizing, so a key is hashed
// once per add or check, not once per generation. Safe to share: nothing awaits between its write
// and its reads.
const hashes: [number, number] = [0, 0];

/**
 * A pre-check of "seen before?" in front of a store's dedup read: `mightContain(id) === false`
 * proves the id was never added within the remembered span, so a caller may skip the read; `true`
 * ("maybe seen": a real repeat or a false positive) must go to the store, which decides.
 *
 * Two {@link BloomFilter}s, `current` and `previous`: `add` goes to `current`; once `current` has
 * as many bits set as `expected` ids set on average, it becomes `previous` and the old `previous`
 * is cleared to be the new `current`. So it never grows: **memory is fixed at 2 x bloomBits(expected,
 * p) / 8 bytes** ({@link SeenFilter.bytes}; ~2.4 bytes per expected id at 1%), and no generation
 * is fuller than its sizing, so the false-positive rate never drifts above its bound however long
 * it runs. An id is remembered while about `expected` later new ids are added, and surely while
 * {@link SeenFilter.span} are (no false negative within that span); older ids may be forgotten,
 * which costs a skipped read's benefit, never correctness, as long as the store's own atomic step
 * still dedups (the ledger's apply, the idempotency begin).
 *
 * Pure (no I/O, no timers). `toJSON()` / `SeenFilter.from(saved)` carry it over a restart.
 *
 * @example
 * ```ts
 * // 100,000 = the deliveries a repeat can trail its first delivery by (the replay span).
 * const seen = new SeenFilter({ expected: 100_000, falsePositiveRate: 0.01 });
 * seen.add('evt-1');
 * seen.mightContain('evt-1'); // true
 * seen.mightContain('evt-2'); // false
 * seen.bytes; // 239632
 * SeenFilter.from(JSON.parse(JSON.stringify(seen))).mightContain('evt-1'); // true
 * ```
 */
export class SeenFilter {
  #current: BloomFilter;
  #previous: BloomFilter;
  #rotations = 0;
  // The bits `expected` distinct ids set on average, m (1 - e^(-k n / m)): a generation this full
  // answers "maybe" for a never-seen id at its target rate. Counting set bits, not ids, keeps the
  // rate whatever the ids: an id that was already a false positive sets no bit, so a count of ids
  // that set one would let a generation take ever more ids (at p = 0.5, ~0.9 "maybe").
  readonly #fullBits: number;

  constructor(options: SeenFilterOptions) {
    if (options instanceof Restored) {
      // SeenFilter.from: the generations it restored, not two fresh bit sets to throw away.
      this.#current = options.current;
      this.#previous = options.previous;
    } else {
      if (!isPlainObject(options as unknown))
        throw new InvalidOptionError('options', 'an object like { expected }', options);
      knownKeys('', options, OPTIONS);
      // BloomFilter validates `expected` and `falsePositiveRate` and names them itself.
      this.#current = new BloomFilter(options);
      this.#previous = new BloomFilter(options);
    }
    const m = this.#current.bits;
    this.#fullBits = Math.round(m * (1 - Math.exp((-this.#current.hashes * this.#current.expected) / m)));
  }

  /**
   * Remembers `id` (a string of at most 4096 UTF-16 units). Rotates first when `current` is full
   * and `id` is new to it: the rotation clears the older generation in place, so an add never
   * allocates.
   */
  add(id: string): void {
    bloomHashes(id, hashes);
    const [h1, h2] = hashes;
    const current = this.#current;
    // A full generation rotates only for an id it does not already answer for: a repeat never
    // fills a generation nor pushes older ids out.
    if (current.setBits >= this.#fullBits && !current.mightContainHashed(h1, h2)) {
      const older = this.#previous;
      older.reset();
      this.#previous = current;
      this.#current = older;
      this.#rotations++;
    }
    this.#current.addHashed(h1, h2);
  }

  /** `false`: `id` was not added within the remembered span. `true`: maybe (ask the store). */
  mightContain(id: string): boolean {
    bloomHashes(id, hashes);
    const [h1, h2] = hashes;
    return this.#current.mightContainHashed(h1, h2) || this.#previous.mightContainHashed(h1, h2);
  }

  /** Forgets every id (both generations). */
  clear(): void {
    this.#current.reset();
    this.#previous.reset();
  }

  /** New ids per generation (the option). */
  get expected(): number {
    return this.#current.expected;
  }

  /** Each generation's false-positive rate when full (the option). */
  get falsePositiveRate(): number {
    return this.#current.targetFalsePositiveRate;
  }

  /** Fixed memory of both bit sets: 2 x bloomBits(expected, p) / 8. */
  get bytes(): number {
    return this.#current.bytes * 2;
  }

  /**
   * New ids an added id is surely remembered for: a generation is full at its fill of `expected`
   * ids, and each id sets at most k bits, so it takes at least that fill / k ids (about 0.7 x
   * `expected` at 1%; in practice close to `expected`).
   */
  get span(): number {
    return Math.ceil(this.#fullBits / this.#current.hashes);
  }

  /** How many times `current` filled and became `previous` (a generation was forgotten). */
  get rotations(): number {
    return this.#rotations;
  }

  /** Ids in both generations (each generation's `BloomFilter.size`). */
  get size(): number {
    return this.#current.size + this.#previous.size;
  }

  /**
   * The chance a never-seen id answers "maybe" now, from both generations' fill:
   * 1 - (1 - fp(current)) (1 - fp(previous)). At most 1 - (1 - p)^2 (< 2p) once warm.
   */
  estimatedFalsePositiveRate(): number {
    const a = this.#current.estimatedFalsePositiveRate();
    const b = this.#previous.estimatedFalsePositiveRate();
    return 1 - (1 - a) * (1 - b);
  }

  /** Both generations as plain JSON: ~2.7 x `expected` bytes of base64 at 1%. */
  toJSON(): SavedSeenFilter {
    return { version: 1, current: this.#current.toJSON(), previous: this.#previous.toJSON() };
  }

  /**
   * A filter from its {@link SeenFilter.toJSON} form, answering as the saved one did. A saved form
   * that is not one (a wrong version, generations of different sizing, a truncated bit set) is
   * refused with `ERR_INVALID_ARGUMENT` naming the field.
   *
   * @example
   * ```ts
   * const seen = new SeenFilter({ expected: 1_000 });
   * seen.add('evt-1');
   * const text = JSON.stringify(seen); // keep it anywhere: a file, a Redis key
   * const again = SeenFilter.from(JSON.parse(text));
   * again.mightContain('evt-1'); // true
   * ```
   */
  static from(saved: SavedSeenFilter): SeenFilter {
    if (!isPlainObject(saved as unknown))
      throw new InvalidArgumentError('saved', 'a saved SeenFilter', saved);
    knownKeys('saved', saved, SAVED_KEYS, 'argument');
    if (saved.version !== 1) throw new InvalidArgumentError('saved.version', '1', saved.version);
    const current = BloomFilter.from(saved.current, 'saved.current');
    const previous = BloomFilter.from(saved.previous, 'saved.previous');
    // One sizing for both: generations swap at each rotation.
    for (const field of ['expected', 'falsePositiveRate'] as const) {
      if (saved.previous[field] !== saved.current[field]) {
        throw new InvalidArgumentError(
          `saved.previous.${field}`,
          `saved.current.${field} (${saved.current[field]}): one sizing for both generations`,
          saved.previous[field],
        );
      }
    }
    return new SeenFilter(new Restored(current, previous) as never);
  }
}

/**
 * An option that must be a {@link SeenFilter}: `undefined` passes unless `required` (`path` names
 * it in the error).
 */
export function seenFilterOption(path: string, value: unknown, required = false): SeenFilter | undefined {
  if ((value === undefined && !required) || value instanceof SeenFilter)
    return value as SeenFilter | undefined;
  throw new InvalidOptionError(path, 'a SeenFilter (new SeenFilter({ expected }))', value);
}
