import { LruMap } from '../core/lru-map.js';
import type { RefusedDecision } from '../windows/limits/decision.js';
import { verdict } from '../windows/limits/verdict.js';

/** A refusal remembered by the cache: the store's decision and the local time it was asked at. */
export interface Block {
  /** The refused decision, as the store answered it (every limit's part, store time). */
  readonly decision: RefusedDecision;
  /** Local time read before the store was asked: the refusal holds until `asked + retryAfterMs`. */
  readonly asked: number;
}

/**
 * Keys refused until a known instant, so a client hammering a refused key costs no store call.
 * Bounded LRU ({@link LruMap}, O(1) per call): a full cache forgets its least recently used block
 * (a forgotten block costs one store call, never a wrong answer).
 *
 * Exactness: a refusal of cost c holds for the same cost until its wait is over (a limit's state
 * only grows by admissions and decays with time). The wait is counted from the local time read
 * *before* the store was asked, so a block never outlasts the store's refusal (the round trip and
 * a skewed server clock only shorten it). Only the same cost is answered here: a larger cost needs
 * a longer wait than the one remembered, a smaller one may pass; both go to the store. A `reset`
 * clears this process's cache; other processes keep their blocks until they end (at most one
 * `retryAfterMs`).
 */
export class BlockCache {
  readonly #blocks: LruMap<string, { until: number; cost: number; block: Block }>;

  constructor(max: number) {
    this.#blocks = new LruMap(max);
  }

  /** The block on `key` for `cost` at local time `now`, if any. */
  get(key: string, cost: number, now: number): Block | undefined {
    // Read without counting as a use: only a hit of the same cost refreshes its place.
    const entry = this.#blocks.peek(key);
    if (entry === undefined) return undefined;
    if (entry.until <= now) {
      this.#blocks.delete(key);
      return undefined;
    }
    if (cost !== entry.cost) return undefined;
    this.#blocks.get(key); // LRU: now the most recently used
    return entry.block;
  }

  /**
   * Remembers `decision` (a refusal of `cost`, asked at local time `asked`) for `key`: a copy, as
   * the caller holds the decision itself and may change it.
   */
  set(key: string, cost: number, asked: number, decision: RefusedDecision): void {
    const kept: RefusedDecision = {
      ...decision,
      limits: decision.limits.map((p) => verdict(p, p.allowed, p.remaining, p.resetAt, p.retryAfterMs)),
    };
    this.#blocks.set(key, { until: asked + decision.retryAfterMs, cost, block: { decision: kept, asked } });
  }

  /** Forgets the block on `key` (its state changed: an admission of another cost). */
  delete(key: string): void {
    this.#blocks.delete(key);
  }

  clear(): void {
    this.#blocks.clear();
  }

  get size(): number {
    return this.#blocks.size;
  }
}

/**
 * The answer a block gives at local time `now`: the refusal as the store gave it, `elapsed` later
 * (decision time and waits moved by the time since it was asked), with reason `blocked`.
 */
export function blockedDecision(block: Block, now: number): RefusedDecision {
  const d = block.decision;
  const elapsed = now - block.asked;
  // Every part a new object: what a caller does to its answer never reaches the cache.
  const limits = d.limits.map((p) =>
    verdict(
      p,
      p.allowed,
      p.remaining,
      p.resetAt,
      p.allowed ? p.retryAfterMs : Math.max(0, p.retryAfterMs - elapsed),
    ),
  );
  return { ...d, reason: 'blocked', at: d.at + elapsed, retryAfterMs: d.retryAfterMs - elapsed, limits };
}
