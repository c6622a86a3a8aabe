/**
 * Counts of a lookup guard's answers over a sliding window of time: answers, null answers,
 * backend calls and the calls slower than a threshold. Pure: time is passed in.
 *
 * The window is a ring of {@link LOOKUP_WINDOW_SLOTS} slots of window/10 ms each, with running
 * totals, so recording and reading are O(1) (a slot is cleared when time leaves it). The window
 * is therefore exact to one slot: what it counts spans between 9/10 of the window and the whole.
 *
 * Why a count of slow calls and not a latency histogram: "p99 above T" holds exactly when more
 * than 1% of the calls took longer than T, so one counter per slot decides it with no bucket
 * error: the guard compares slow / calls with 1%.
 *
 * Internal (the guard's, not exported): after `w.answer(0, true)` and `w.backend(0, 1_500)` on
 * `new LookupWindow(60_000, 1_000)`, `w.totals(0)` is `{ answers: 1, nulls: 1, calls: 1, slow: 1 }`
 * and `w.totals(60_000)` is all zeros (the slot has left the window).
 */
export class LookupWindow {
  readonly #slotMs: number;
  readonly #slowMs: number;
  // Per slot: answers, nulls, calls, slow.
  readonly #counts = new Float64Array(LOOKUP_WINDOW_SLOTS * 4);
  #head = -1; // the newest slot number seen
  #answers = 0;
  #nulls = 0;
  #calls = 0;
  #slow = 0;

  /** `windowMs` >= 10 (the caller validates); calls longer than `slowMs` count as slow. */
  constructor(windowMs: number, slowMs: number) {
    this.#slotMs = windowMs / LOOKUP_WINDOW_SLOTS;
    this.#slowMs = slowMs;
  }

  /** Records one answer the guard gave at `now` (`isNull`: it answered null). */
  answer(now: number, isNull: boolean): void {
    const at = this.#slot(now) * 4;
    this.#counts[at] = (this.#counts[at] as number) + 1;
    this.#answers++;
    if (isNull) {
      this.#counts[at + 1] = (this.#counts[at + 1] as number) + 1;
      this.#nulls++;
    }
  }

  /** Records one backend call that ended at `now` after `latencyMs`. */
  backend(now: number, latencyMs: number): void {
    const at = this.#slot(now) * 4;
    this.#counts[at + 2] = (this.#counts[at + 2] as number) + 1;
    this.#calls++;
    if (latencyMs > this.#slowMs) {
      this.#counts[at + 3] = (this.#counts[at + 3] as number) + 1;
      this.#slow++;
    }
  }

  /** The counts of the window that ends at `now`. */
  totals(now: number): { answers: number; nulls: number; calls: number; slow: number } {
    this.#slot(now);
    return { answers: this.#answers, nulls: this.#nulls, calls: this.#calls, slow: this.#slow };
  }

  /** Forgets every count. */
  clear(): void {
    this.#counts.fill(0);
    this.#head = -1;
    this.#answers = this.#nulls = this.#calls = this.#slow = 0;
  }

  // The ring index for `now`, after clearing the slots that left the window. A clock that steps
  // back records into the newest slot: counts never move to a slot already cleared.
  #slot(now: number): number {
    const slot = Math.floor(now / this.#slotMs);
    if (slot > this.#head) {
      const from = Math.max(this.#head + 1, slot - LOOKUP_WINDOW_SLOTS + 1);
      for (let s = from; s <= slot; s++) this.#clearSlot(mod(s));
      // A jump longer than the window clears all ten slots once (from = slot - 9).
      this.#head = slot;
    }
    return mod(this.#head);
  }

  #clearSlot(index: number): void {
    const at = index * 4;
    this.#answers -= this.#counts[at] as number;
    this.#nulls -= this.#counts[at + 1] as number;
    this.#calls -= this.#counts[at + 2] as number;
    this.#slow -= this.#counts[at + 3] as number;
    this.#counts.fill(0, at, at + 4);
  }
}

/** Slots per window: the window is exact to 1/10 of its length, at 40 numbers of memory. */
export const LOOKUP_WINDOW_SLOTS = 10;

function mod(slot: number): number {
  return ((slot % LOOKUP_WINDOW_SLOTS) + LOOKUP_WINDOW_SLOTS) % LOOKUP_WINDOW_SLOTS;
}
