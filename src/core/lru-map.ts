import { InvalidOptionError } from './errors.js';

interface Node<K, V> {
  readonly key: K;
  value: V;
  /** The next more recently used node (undefined: this is the newest). */
  newer: Node<K, V> | undefined;
  /** The next less recently used node (undefined: this is the oldest). */
  older: Node<K, V> | undefined;
}

/**
 * A map of at most `max` entries that forgets exactly its least recently used entry when full:
 * a Map of nodes in a doubly linked list, newest to oldest, so every call is O(1).
 *
 * Not a Map evicted from its front (`map.delete(map.keys().next().value)`): V8 leaves a deleted
 * entry as a hole until the table is rebuilt and the iterator walks every hole from the front,
 * so once full each eviction costs up to the map's size (~10-20 µs per insert at 20,000 entries,
 * where this map's takes ~0.4 µs: `node scripts/micro-costs.mjs map-evict`). Not lru-cache: the
 * core has no runtime dependencies (DESIGN §2, architecture). Where an approximate order is enough
 * and a lookup must stay one Map get, see {@link BoundedMap}.
 */
export class LruMap<K, V> {
  readonly #max: number;
  readonly #nodes = new Map<K, Node<K, V>>();
  #newest: Node<K, V> | undefined;
  #oldest: Node<K, V> | undefined;

  constructor(max: number) {
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new InvalidOptionError('max', 'a whole number of entries, at least 1', max);
    }
    this.#max = max;
  }

  /** The value under `key`, which becomes the most recently used. */
  get(key: K): V | undefined {
    const node = this.#nodes.get(key);
    if (node === undefined) return undefined;
    this.#toNewest(node);
    return node.value;
  }

  /** The value under `key`, leaving the order as it is. */
  peek(key: K): V | undefined {
    return this.#nodes.get(key)?.value;
  }

  /** Sets `key` as the most recently used; when full, the least recently used goes first. */
  set(key: K, value: V): this {
    const node = this.#nodes.get(key);
    if (node !== undefined) {
      node.value = value;
      this.#toNewest(node);
      return this;
    }
    if (this.#nodes.size >= this.#max) this.delete((this.#oldest as Node<K, V>).key);
    const added: Node<K, V> = { key, value, newer: undefined, older: this.#newest };
    if (this.#newest !== undefined) this.#newest.newer = added;
    else this.#oldest = added;
    this.#newest = added;
    this.#nodes.set(key, added);
    return this;
  }

  delete(key: K): boolean {
    const node = this.#nodes.get(key);
    if (node === undefined) return false;
    this.#unlink(node);
    this.#nodes.delete(key);
    return true;
  }

  clear(): void {
    this.#nodes.clear();
    this.#newest = undefined;
    this.#oldest = undefined;
  }

  get size(): number {
    return this.#nodes.size;
  }

  /** Keys from the least to the most recently used. */
  *keys(): IterableIterator<K> {
    for (let node = this.#oldest; node !== undefined; node = node.newer) yield node.key;
  }

  #toNewest(node: Node<K, V>): void {
    if (node === this.#newest) return;
    this.#unlink(node);
    node.older = this.#newest;
    node.newer = undefined;
    (this.#newest as Node<K, V>).newer = node;
    this.#newest = node;
  }

  #unlink(node: Node<K, V>): void {
    if (node.newer !== undefined) node.newer.older = node.older;
    else this.#newest = node.older;
    if (node.older !== undefined) node.older.newer = node.newer;
    else this.#oldest = node.newer;
  }
}
