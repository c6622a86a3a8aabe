import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { fmix32, fnv1a } from '../core/hash.js';
import { isPlainObject, keysOf, knownKeys, positiveInt } from '../core/validate.js';

/** Options of {@link BloomFilter}: how many keys it is sized for and the false-positive rate it then has. */
export interface BloomFilterOptions {
  /** How many distinct keys it is sized for (a positive safe integer). */
  expected: number;
  /** The false-positive rate at `expected` keys, in [1e-9, 0.5]. Default 0.01. */
  falsePositiveRate?: number;
}

const OPTIONS = keysOf<BloomFilterOptions>({ expected: true, falsePositiveRate: true });

/**
 * A {@link BloomFilter} as plain JSON (`toJSON`, `BloomFilter.from`): its sizing, its key count and
 * its bit set, base64 of the 32-bit words little-endian, so a filter saved on one machine reads the
 * same on any other (the hashes depend only on the key's UTF-16 units).
 */
export interface SavedBloomFilter {
  readonly expected: number;
  readonly falsePositiveRate: number;
  readonly size: number;
  readonly bits: string;
}

const SAVED_KEYS = keysOf<SavedBloomFilter>({
  expected: true,
  falsePositiveRate: true,
  size: true,
  bits: true,
});

// 1%: about 9.6 bits (1.2 bytes) per key and 7 hashes; one absent key in a hundred still reaches
// the backend, which is the point of a pre-check: it must be cheap, not perfect.
const DEFAULT_FALSE_POSITIVE_RATE = 0.01;
// 0.5 is a filter of ~1.4 bits per key that still halves the traffic it screens; above it a
// "maybe" says less than a coin. 1e-9 needs 30 hashes: beyond that each check costs more than
// the backend call a false positive would cost, and a cache of exact keys is the better tool.
const MIN_FALSE_POSITIVE_RATE = 1e-9;
const MAX_FALSE_POSITIVE_RATE = 0.5;
/**
 * The largest filter: 64 MiB (2^29 bits, so every bit index is a 32-bit integer). That holds
 * ~56 million keys at 1% or ~28 million at 1e-4 in one process's memory; a key set larger than
 * that belongs in a shared store, not copied into every process.
 */
export const MAX_BLOOM_BYTES = 64 * 2 ** 20;
/** The longest key hashed, in UTF-16 units: a check costs O(length), and ids are far shorter. */
export const MAX_BLOOM_KEY_LENGTH = 4096;

const LN2 = Math.LN2;

/**
 * The bits a filter of `n` keys at false-positive rate `p` needs: m = -n ln p / (ln 2)^2, rounded
 * up to whole 32-bit words. Exported for docs and tests; {@link BloomFilter} uses it.
 *
 * @example
 * ```ts
 * bloomBits(10_000, 0.01); // 95872
 * ```
 */
export function bloomBits(n: number, p: number): number {
  const exact = Math.ceil((-n * Math.log(p)) / (LN2 * LN2));
  return Math.ceil(exact / 32) * 32;
}

/**
 * A Bloom filter of string keys: `mightContain` answers `false` only for a key never added (no
 * false negative); `true` may be wrong for a key never added, at about the rate it was sized for.
 * It cannot forget a key: build a fresh one (or `reset`) to drop deleted keys.
 *
 * Pure and dependency-free (the core has no runtime dependency: DESIGN §2), so not the
 * `bloom-filters` package. Sized from (n, p): m = -n ln p / (ln 2)^2 bits, k = round(m/n ln 2)
 * hashes; the k indexes come from two 32-bit hashes of the key (FNV-1a and a murmur3-style mix)
 * by enhanced double hashing. Bounded: at most {@link MAX_BLOOM_BYTES}.
 *
 * @example
 * ```ts
 * const known = new BloomFilter({ expected: 10_000, falsePositiveRate: 0.01 });
 * known.add('user:42');
 * known.mightContain('user:42'); // true
 * known.mightContain('user:43'); // false
 * known.bytes; // 11984
 * known.hashes; // 7
 * ```
 */
export class BloomFilter {
  readonly #words: Uint32Array;
  readonly #bits: number;
  readonly #hashes: number;
  readonly #expected: number;
  readonly #rate: number;
  #size = 0;
  #setBits = 0;

  constructor(options: BloomFilterOptions) {
    if (!isPlainObject(options as unknown))
      throw new InvalidOptionError('options', 'an object like { expected }', options);
    knownKeys('', options, OPTIONS);
    this.#expected = positiveInt('expected', options.expected);
    const p = options.falsePositiveRate ?? DEFAULT_FALSE_POSITIVE_RATE;
    if (typeof p !== 'number' || !(p >= MIN_FALSE_POSITIVE_RATE && p <= MAX_FALSE_POSITIVE_RATE)) {
      throw new InvalidOptionError(
        'falsePositiveRate',
        `a number in [${MIN_FALSE_POSITIVE_RATE}, ${MAX_FALSE_POSITIVE_RATE}]`,
        options.falsePositiveRate,
      );
    }
    this.#rate = p;
    const bits = bloomBits(this.#expected, p);
    if (bits / 8 > MAX_BLOOM_BYTES) {
      throw new InvalidOptionError(
        'expected',
        `at most ${MAX_BLOOM_BYTES} bytes of filter (${Math.floor((MAX_BLOOM_BYTES * 8 * LN2 * LN2) / -Math.log(p))} keys at rate ${p}); it needs ${bits / 8}`,
        options.expected,
      );
    }
    this.#bits = bits;
    this.#hashes = Math.max(1, Math.round((bits / this.#expected) * LN2));
    this.#words = new Uint32Array(bits / 32);
  }

  /** Adds `key`. Returns `true` when it set a new bit (the key was surely not in before). */
  add(key: string): boolean {
    return this.addHashed(fnv1a(checkKey(key)), murmurMix(key));
  }

  /** `false`: `key` was never added. `true`: it was, or it is a false positive. */
  mightContain(key: string): boolean {
    return this.mightContainHashed(fnv1a(checkKey(key)), murmurMix(key));
  }

  /**
   * {@link BloomFilter.add} of a key already hashed by {@link bloomHashes}: filters of one sizing
   * (a {@link SeenFilter}'s two generations) probe one key with one hashing.
   */
  addHashed(h1: number, h2: number): boolean {
    let h = h1;
    let fresh = false;
    for (let i = 0; i < this.#hashes; i++) {
      const bit = (h >>> 0) % this.#bits;
      const word = bit >>> 5;
      const mask = 1 << (bit & 31);
      const w = this.#words[word] as number;
      if ((w & mask) === 0) {
        this.#words[word] = w | mask;
        this.#setBits++;
        fresh = true;
      }
      h = nextIndex(h, h2, i);
    }
    if (fresh) this.#size++;
    return fresh;
  }

  /** {@link BloomFilter.mightContain} of a key already hashed by {@link bloomHashes}. */
  mightContainHashed(h1: number, h2: number): boolean {
    let h = h1;
    for (let i = 0; i < this.#hashes; i++) {
      const bit = (h >>> 0) % this.#bits;
      if (((this.#words[bit >>> 5] as number) & (1 << (bit & 31))) === 0) return false;
      h = nextIndex(h, h2, i);
    }
    return true;
  }

  /**
   * The filter as plain JSON (see {@link SavedBloomFilter}): m / 8 bytes as base64, about 4/3 of
   * {@link BloomFilter.bytes}.
   */
  toJSON(): SavedBloomFilter {
    const bytes = new Uint8Array(this.#words.length * 4);
    const view = new DataView(bytes.buffer);
    for (let i = 0; i < this.#words.length; i++) view.setUint32(i * 4, this.#words[i] as number, true);
    return {
      expected: this.#expected,
      falsePositiveRate: this.#rate,
      size: this.#size,
      bits: toBase64(bytes),
    };
  }

  /**
   * A filter from its {@link BloomFilter.toJSON} form: the same answers for every key. A saved
   * form that does not fit its own sizing (a truncated bit set, a negative size) is refused with
   * `ERR_INVALID_ARGUMENT` naming the field.
   *
   * @example
   * ```ts
   * const known = new BloomFilter({ expected: 1_000 });
   * known.add('user:42');
   * const again = BloomFilter.from(JSON.parse(JSON.stringify(known)));
   * again.mightContain('user:42'); // true
   * again.size; // 1
   * ```
   */
  static from(saved: SavedBloomFilter, path = 'saved'): BloomFilter {
    if (!isPlainObject(saved as unknown)) throw new InvalidArgumentError(path, 'a saved BloomFilter', saved);
    knownKeys(path, saved, SAVED_KEYS, 'argument');
    let filter: BloomFilter;
    try {
      filter = new BloomFilter({ expected: saved.expected, falsePositiveRate: saved.falsePositiveRate });
    } catch (err) {
      const field = (err as { option?: string }).option ?? 'expected';
      throw new InvalidArgumentError(
        `${path}.${field}`,
        'the sizing of a BloomFilter',
        (saved as never)[field],
      );
    }
    // The length is checked before decoding: a huge string is refused without being read.
    const bytes =
      typeof saved.bits === 'string' && saved.bits.length === 4 * Math.ceil(filter.bytes / 3)
        ? fromBase64(saved.bits)
        : undefined;
    if (bytes === undefined || bytes.length !== filter.bytes) {
      throw new InvalidArgumentError(
        `${path}.bits`,
        `base64 of ${filter.bytes} bytes (the bit set of its sizing)`,
        typeof saved.bits === 'string' ? `${saved.bits.length} characters` : saved.bits,
      );
    }
    if (!Number.isSafeInteger(saved.size) || saved.size < 0) {
      throw new InvalidArgumentError(`${path}.size`, 'a non-negative safe integer', saved.size);
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let setBits = 0;
    for (let i = 0; i < filter.#words.length; i++) {
      const w = view.getUint32(i * 4, true);
      filter.#words[i] = w;
      setBits += popcount(w);
    }
    // Every counted key set 1 to k bits, and every set bit was set by a counted key: a form whose
    // bits and size disagree (bits set with no key, more keys than bits) was not written by toJSON.
    if (saved.size > setBits || setBits > saved.size * filter.#hashes) {
      throw new InvalidArgumentError(
        `${path}.size`,
        `a count of keys that fits the ${setBits} bits set (from ${Math.ceil(setBits / filter.#hashes)} to ${setBits})`,
        saved.size,
      );
    }
    filter.#size = saved.size;
    filter.#setBits = setBits;
    return filter;
  }

  /** Forgets every key (the filter then answers `false` for all). */
  reset(): void {
    this.#words.fill(0);
    this.#size = 0;
    this.#setBits = 0;
  }

  /** Bits set now (of {@link BloomFilter.bits}): the fill the false-positive rate follows. */
  get setBits(): number {
    return this.#setBits;
  }

  /**
   * Keys added that set at least one new bit: the distinct keys added, minus the few that were
   * already false positives when added (a slight undercount, never an overcount of distinct keys).
   */
  get size(): number {
    return this.#size;
  }

  /** The number of bits m. */
  get bits(): number {
    return this.#bits;
  }

  /** Memory of the bit set: m / 8 bytes (the object around it adds well under a kilobyte). */
  get bytes(): number {
    return this.#bits / 8;
  }

  /** The number of hashes k per key. */
  get hashes(): number {
    return this.#hashes;
  }

  /** The key count it was sized for. */
  get expected(): number {
    return this.#expected;
  }

  /** The false-positive rate it was sized for (at `expected` keys). */
  get targetFalsePositiveRate(): number {
    return this.#rate;
  }

  /**
   * The false-positive rate now, from the bits set: (set / m)^k, the chance that k positions of a
   * never-added key all land on set bits. Above the target once more than `expected` keys were
   * added: a sign to rebuild the filter larger.
   */
  estimatedFalsePositiveRate(): number {
    return (this.#setBits / this.#bits) ** this.#hashes;
  }
}

// btoa/atob (Node >= 16, browsers, workers) rather than Buffer: the windows layer runs anywhere.
// Chunks of 32 KiB keep each String.fromCharCode call under engines' argument limits.
function toBase64(bytes: Uint8Array): string {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

// Bits set in a 32-bit word (SWAR).
function popcount(word: number): number {
  let v = word - ((word >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (((v + (v >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

function fromBase64(text: string): Uint8Array | undefined {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return undefined;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * The two 32-bit hashes a {@link BloomFilter} derives its indexes from, for `addHashed` and
 * `mightContainHashed`. Internal to the windows layer (not exported from the package).
 */
export function bloomHashes(key: string, into: [number, number]): void {
  into[0] = fnv1a(checkKey(key));
  into[1] = murmurMix(key);
}

function checkKey(key: unknown): string {
  if (typeof key !== 'string' || key.length > MAX_BLOOM_KEY_LENGTH) {
    throw new InvalidArgumentError('key', `a string of at most ${MAX_BLOOM_KEY_LENGTH} UTF-16 units`, key);
  }
  return key;
}

// Enhanced double hashing (Dillinger & Manolios): g(i+1) = g(i) + h2 + i, so two keys that share
// both hashes modulo m still part after a few rounds; plain g(i) = h1 + i·h2 would make them
// collide on every index. 32-bit unsigned arithmetic throughout.
function nextIndex(h: number, h2: number, i: number): number {
  return (h + h2 + i) >>> 0;
}

/**
 * A murmur3-style 32-bit hash over UTF-16 code units (one unit per round, then the murmur3
 * finaliser): independent enough of FNV-1a that the pair behaves as two hash functions.
 */
function murmurMix(key: string): number {
  let h = 0x9747b28c ^ key.length;
  for (let i = 0; i < key.length; i++) {
    let c = Math.imul(key.charCodeAt(i), 0xcc9e2d51);
    c = (c << 15) | (c >>> 17);
    h ^= Math.imul(c, 0x1b873593);
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  return fmix32(h);
}
