// The consumer's spilled keys: keys whose newer entries it leaves in its own pending list instead
// of holding them, while the key's backlog is full (a failed head blocks it), so that reads go on
// for the other keys with memory still bounded. Plain bookkeeping (no I/O); the consumer reads the
// entries back in id order once the key has room (see consumer.ts, the read loop).
import { compareIdText } from './stream-id.js';

/** One read-back pass over the consumer's own pending list (stream-pending-read.lua). */
export interface SpillPass {
  /** Where the next page starts: an id (inclusive) or `(` and an id (after it). */
  start: string;
  /** The last id the pass has read ('' before its first page). */
  cursor: string;
  /** Spilled keys whose entries this pass hands back (until the key is at its cap again). */
  readonly eligible: Set<string>;
  /** A full pass reads to the end of the pending list (see {@link Spill.startPass}). */
  readonly full: boolean;
}

/** See {@link createSpill}. */
export interface Spill {
  /** Spilled keys. */
  readonly size: number;
  has(key: string): boolean;
  /**
   * Whether entry `id` of `key` (not held; `count` entries of the key are held) is left pending
   * instead of held: always when the key has entries spilled already (per-key order), else when
   * the key holds `keyCap` (then it is spilled from here on), unless `maxKeys` keys are spilled
   * already (held beyond its cap then: never beyond the consumer's maxHeld).
   */
  place(id: string, key: string, count: number): boolean;
  /** The lowest id left pending, if any: the pending list from there on is touched. */
  low(): string | undefined;
  /**
   * A pass over the keys for which `eligible(key)` holds (they have room again), from the lowest
   * entry they left pending; `full`: over every spilled key's, read to the end whatever the
   * eligible keys do (picks up this consumer's own pending entries it let go). Undefined when
   * there is nothing to read back.
   */
  startPass(eligible: (key: string) => boolean, full: boolean): SpillPass | undefined;
  readonly pass: SpillPass | undefined;
  /** The pass stops handing back `key`: its entries from `id` on stay spilled. */
  stop(key: string, id: string): void;
  /** The pass read to the end of the pending list: the keys it never stopped are drained. */
  endPass(reachedEnd: boolean): void;
}

/** A {@link Spill} for keys capped at `keyCap` held entries, with at most `maxKeys` spilled keys. */
export function createSpill(keyCap: number, maxKeys: number): Spill {
  // Spilled key -> the lowest of its entries left pending (its entries below it are all held).
  const first = new Map<string, string>();
  let pass: SpillPass | undefined;

  function lowest(keys: Iterable<string>): string | undefined {
    let low: string | undefined;
    for (const key of keys) {
      const id = first.get(key) as string;
      if (low === undefined || compareIdText(id, low) < 0) low = id;
    }
    return low;
  }

  return {
    get size() {
      return first.size;
    },
    has: (key) => first.has(key),
    place(id, key, count) {
      const known = first.get(key);
      if (known !== undefined) {
        if (compareIdText(id, known) < 0) first.set(key, id);
        // An entry (a reclaim) behind a pass that hands the key back: the pass must not drain the key.
        if (pass?.eligible.has(key) && compareIdText(id, pass.cursor || '0-0') <= 0) {
          pass.eligible.delete(key);
        }
        return true;
      }
      if (count < keyCap || first.size >= maxKeys) return false;
      first.set(key, id);
      return true;
    },
    low: () => lowest(first.keys()),
    startPass(eligible, full) {
      const keys = new Set<string>();
      for (const key of first.keys()) if (eligible(key)) keys.add(key);
      if (keys.size === 0 && !full) return undefined;
      const start = lowest(full ? first.keys() : keys);
      if (start === undefined) return undefined;
      pass = { start, cursor: '', eligible: keys, full };
      return pass;
    },
    get pass() {
      return pass;
    },
    stop(key, id) {
      pass?.eligible.delete(key);
      first.set(key, id);
    },
    endPass(reachedEnd) {
      if (reachedEnd && pass !== undefined) for (const key of pass.eligible) first.delete(key);
      pass = undefined;
    },
  };
}
