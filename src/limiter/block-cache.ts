/**
 * Keys refused until a known instant, so a client hammering a refused key costs no store call.
 * Bounded LRU: a full cache forgets its least recently used block (a forgotten block costs one
 * store call, never a wrong answer).
 *
 * Exactness: a refusal of cost c means the store would refuse any cost >= c until `until`
 * (a limit's state only grows by admissions and decays with time, and every algorithm needs at
 * least as long for a larger cost), so the cache refuses only what the store would. A smaller
 * cost goes to the store. A `reset` clears this process's cache; other processes keep their
 * blocks until `until` (at most one `retryAfterMs`).
 */
export class BlockCache {
  readonly #max: number;
  readonly #blocks = new Map<string, { until: number; cost: number; resetAt: number; bound: number }>();

  constructor(max: number) {
    this.#max = max;
  }

  /** The block on `key` for `cost` at local time `now`, if any. */
  get(key: string, cost: number, now: number): { until: number; resetAt: number; bound: number } | undefined {
    const block = this.#blocks.get(key);
    if (block === undefined) return undefined;
    if (block.until <= now) {
      this.#blocks.delete(key);
      return undefined;
    }
    if (cost < block.cost) return undefined;
    // Refresh its place: LRU.
    this.#blocks.delete(key);
    this.#blocks.set(key, block);
    return block;
  }

  set(key: string, cost: number, until: number, resetAt: number, bound: number): void {
    this.#blocks.delete(key);
    if (this.#blocks.size >= this.#max) this.#blocks.delete(this.#blocks.keys().next().value as string);
    this.#blocks.set(key, { until, cost, resetAt, bound });
  }

  clear(): void {
    this.#blocks.clear();
  }

  get size(): number {
    return this.#blocks.size;
  }
}
