import { InvalidOptionError } from './errors.js';

/**
 * A map of at most `max` entries that forgets the least recently used first, in O(1) per call:
 * two generations, as hashlru and quick-lru keep them. New and used entries go to the young map;
 * when it holds `max / 2`, it becomes the old map and the previous old map is dropped whole. An
 * entry set, or found by `get`, is kept for at least the next `max / 2 - 1` calls of either.
 *
 * Why not a Map evicted from its front (`map.delete(map.keys().next().value)`): V8 leaves a deleted
 * entry as a hole until the table is rebuilt, and the iterator walks every hole from the front, so
 * once full each eviction costs up to the map's size (~10-20 µs per insert at 20,000 entries,
 * where this map's takes ~0.2 µs: `node scripts/micro-costs.mjs map-evict`), and a limiter fed
 * unique keys pays it on every take. Not quick-lru itself: the core has no runtime dependencies,
 * and it wraps every value in an object of its own and does `has` then `get` per hit.
 *
 * It holds between `max / 2` and `max` entries: where a bound is a documented option and the order
 * must be exact, see `LruMap` (lru-map.ts: a node per entry, one more object reached per lookup).
 *
 * Values must not be `undefined` (`get` answers `undefined` for a missing key).
 */
export class BoundedMap<K, V> {
  #young = new Map<K, V>();
  #old = new Map<K, V>();
  readonly #half: number;

  constructor(max: number) {
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new InvalidOptionError('max', 'a whole number of entries, at least 1', max);
    }
    this.#half = Math.floor(max / 2);
  }

  /** The value under `key`, which now counts as used. */
  get(key: K): V | undefined {
    const value = this.#young.get(key);
    if (value !== undefined) return value;
    const old = this.#old.get(key);
    if (old !== undefined) {
      this.#old.delete(key);
      this.#promote(key, old);
    }
    return old;
  }

  /** True when `key` is held; does not count as a use. */
  has(key: K): boolean {
    return this.#young.has(key) || this.#old.has(key);
  }

  set(key: K, value: V): this {
    if (this.#young.has(key)) this.#young.set(key, value);
    else {
      this.#old.delete(key);
      this.#promote(key, value);
    }
    return this;
  }

  delete(key: K): boolean {
    // A key lives in one generation at most.
    return this.#young.delete(key) || this.#old.delete(key);
  }

  clear(): void {
    this.#young.clear();
    this.#old.clear();
  }

  /** Every entry, least recently used first (roughly: oldest generation first); not a use. */
  *entries(): IterableIterator<[K, V]> {
    yield* this.#old;
    yield* this.#young;
  }

  get size(): number {
    return this.#young.size + this.#old.size;
  }

  #promote(key: K, value: V): void {
    this.#young.set(key, value);
    if (this.#young.size >= this.#half) {
      this.#old = this.#young;
      this.#young = new Map();
    }
  }
}
