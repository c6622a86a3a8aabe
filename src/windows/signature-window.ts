import { InvalidArgumentError } from '../core/errors.js';
import { pinShapes } from '../core/pin-shapes.js';
import {
  isPlainObject,
  keysOf,
  knownKeys,
  type Order,
  optionalOrder,
  orderFromString,
  orderToString,
  positiveInt,
} from '../core/validate.js';

const WINDOW_OPTIONS = keysOf<SignatureWindowOptions>({ capacity: true });

/** What {@link SignatureWindow.admit} decided. */
export type AdmitOutcome = 'fresh' | 'duplicate' | 'stale';

/** Options of {@link SignatureWindow}. */
export interface SignatureWindowOptions {
  /**
   * How many signatures the window keeps. Derive it from a business limit and write the
   * derivation beside it (DESIGN §3.2): a FIFO window of capacity C never lets a repeat through
   * iff, for every signature X, fewer than C distinct other signatures are first seen between
   * X's first delivery and X's last repeat.
   */
  capacity: number;
}

/** The saved form written by {@link SignatureWindow.toJSON} (format `onceflow.window.v1`). */
export interface SavedWindow {
  format: 'onceflow.window.v1';
  /** Oldest first. */
  signatures: string[];
  /** The order of each signature as a decimal string, or `null` when it had none. */
  orders: (string | null)[];
  /** The highest order ever evicted, or `null` while no ordered entry was evicted. */
  horizon: string | null;
}

const FORMAT = 'onceflow.window.v1';
const FORMAT_FAMILY = 'onceflow.window.';

/**
 * A per-owner, count-bounded FIFO window of signatures: the dedup state of one owner.
 *
 * - A present signature is a `duplicate` and changes nothing: a repeat does not refresh its
 *   position (FIFO, not LRU), so a storm of repeats cannot keep an old entry alive forever.
 * - An absent signature is inserted as the newest; while the window holds more than `capacity`
 *   entries, the oldest is evicted, one at a time. The window is never cleared wholesale:
 *   clearing a dedup window is forgetting what was processed.
 * - With orders, the window remembers the highest order it ever evicted (its *horizon*). An absent
 *   signature whose order is at or below the horizon is `stale`: it may be a repeat the window
 *   has already forgotten, so it is not admitted and goes to reconciliation instead of being
 *   applied a second time. A too-small window thus fails safe.
 *
 * Pure: no I/O, no time. It is the reference model every store is tested against.
 *
 * @example
 * ```ts
 * // 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap (DESIGN §3.2).
 * const w = new SignatureWindow({ capacity: 4 });
 * w.admit('v1|room=a|round=1|net=5|final=false', 1); // 'fresh'
 * w.admit('v1|room=a|round=1|net=5|final=false', 1); // 'duplicate'
 * ```
 */
export class SignatureWindow {
  readonly #capacity: number;
  // A ring of slots, the oldest at `#start`. It grows while the window fills, then an admit into a
  // full window frees the oldest slot and writes the new signature there: nothing shifts, nothing
  // is compacted, nothing is allocated. Freed slots hold `undefined`, never a string. The ring is
  // `capacity` long, longer only while a loaded over-capacity save is held.
  #ring: (string | undefined)[] = [];
  // Parallel to #ring; allocated on the first entry that carries an order, so a window that never
  // sees one (the common case) keeps one array, not two.
  #orders: (Order | undefined)[] | undefined;
  #start = 0;
  #count = 0;
  // For small windows a linear scan beats hashing; past INDEX_THRESHOLD a Set keeps admit O(1).
  #index: Set<string> | undefined;
  #horizon: Order | undefined;

  constructor(options: SignatureWindowOptions) {
    pinShapes(SignatureWindow, pinnedWindows);
    if (isPlainObject(options)) knownKeys('', options, WINDOW_OPTIONS);
    this.#capacity = positiveInt('capacity', options?.capacity);
    if (this.#capacity > INDEX_THRESHOLD) this.#index = new Set();
  }

  /** How many signatures the window keeps (private behind a getter: it cannot be changed). */
  get capacity(): number {
    return this.#capacity;
  }

  /** The number of signatures held (may exceed `capacity` for a loaded over-capacity legacy save). */
  get size(): number {
    return this.#count;
  }

  /** The highest order ever evicted, or `undefined`. */
  get horizon(): Order | undefined {
    return this.#horizon;
  }

  /** True when the window holds `signature`. */
  has(signature: string): boolean {
    if (this.#index) return this.#index.has(signature);
    // Freed slots hold `undefined`, so a scan of the whole ring sees only live entries.
    return typeof signature === 'string' && this.#ring.includes(signature);
  }

  /**
   * Decides whether `signature` is `fresh` (now recorded), a `duplicate` or `stale`, and records
   * it when fresh. `order` is any per-owner monotonic-ish key (a safe integer or a bigint).
   */
  admit(signature: string, order?: Order): AdmitOutcome {
    if (typeof signature !== 'string' || signature.length === 0) {
      throw new InvalidArgumentError('signature', 'a non-empty string', signature);
    }
    if (order !== undefined) optionalOrder('order', order);
    if (this.has(signature)) return 'duplicate';
    if (order !== undefined && this.#horizon !== undefined && order <= this.#horizon) return 'stale';
    // Evicting first, then inserting, evicts the same oldest entries as insert-then-evict would.
    while (this.#count >= this.#capacity) this.#evictOldest();
    this.#push(signature, order);
    return 'fresh';
  }

  /**
   * Records an absent `signature` as the newest **whatever the horizon**, evicting the oldest as
   * {@link SignatureWindow.admit} does; returns `false` and changes nothing when the window holds
   * it. Only for an entry proven never applied by other means (a ledger's journal, see
   * `Ledger.resolve`): the horizon is what keeps a forgotten repeat out, and this skips it.
   *
   * @example
   * ```ts
   * const w = new SignatureWindow({ capacity: 1 });
   * w.admit('a', 1); // 'fresh'
   * w.admit('b', 2); // 'fresh'
   * w.admit('c', 1); // 'stale'
   * w.insert('c', 1); // true
   * w.admit('c', 1); // 'duplicate'
   * ```
   */
  insert(signature: string, order?: Order): boolean {
    if (typeof signature !== 'string' || signature.length === 0) {
      throw new InvalidArgumentError('signature', 'a non-empty string', signature);
    }
    if (order !== undefined) optionalOrder('order', order);
    if (this.has(signature)) return false;
    while (this.#count >= this.#capacity) this.#evictOldest();
    this.#push(signature, order);
    return true;
  }

  /** The signatures held, oldest first. */
  signatures(): string[] {
    const out: string[] = [];
    this.#each((i) => out.push(this.#ring[i] as string));
    return out;
  }

  /** The saved form; {@link SignatureWindow.from} reads it back. */
  toJSON(): SavedWindow {
    return {
      format: FORMAT,
      signatures: this.signatures(),
      orders: this.#orderList().map((o) => (o === undefined ? null : orderToString(o))),
      horizon: this.#horizon === undefined ? null : orderToString(this.#horizon),
    };
  }

  /**
   * Reads a saved window without losing an entry. Accepted forms:
   * - the current format (`toJSON()` output);
   * - a plain array of signatures, oldest first;
   * - an object whose keys are exactly `"1".."n"` (an array that went through a Lua table or a
   *   sparse JSON encoder), read in numeric key order;
   * - any other object: a legacy map whose **keys** are signatures (values ignored), read in
   *   sorted key order so the result does not depend on insertion order.
   *
   * A window saved over capacity is kept whole and shrinks to capacity at the next insert.
   *
   * @example
   * ```ts
   * const legacy = { 'v1|room=a|round=1|net=5|final=true': 1700000000 };
   * const w = SignatureWindow.from(legacy, { capacity: 4 });
   * w.admit('v1|room=a|round=1|net=5|final=true'); // 'duplicate'
   * ```
   */
  static from(saved: unknown, options: SignatureWindowOptions): SignatureWindow {
    const window = new SignatureWindow(options);
    if (Array.isArray(saved)) {
      for (const [i, sig] of saved.entries()) window.#load(`saved[${i}]`, sig, undefined);
      return window;
    }
    if (!isPlainObject(saved)) {
      throw new InvalidArgumentError('saved', 'a saved window (array or object)', saved);
    }
    if (saved.format === FORMAT) return loadCurrent(window, saved);
    // A save in a format this version does not know (a newer one, or a typo) must not fall through
    // to the legacy map reading: its keys (`format`, `signatures`, ...) would become the window and
    // every real entry would be forgotten, so each one would be applied again.
    if (typeof saved.format === 'string' && saved.format.startsWith(FORMAT_FAMILY)) {
      throw new InvalidArgumentError('saved.format', `'${FORMAT}'`, saved.format);
    }
    const keys = Object.keys(saved);
    if (isOneToN(keys)) {
      for (let i = 1; i <= keys.length; i++) window.#load(`saved["${i}"]`, saved[String(i)], undefined);
      return window;
    }
    for (const key of keys.sort()) window.#load(`saved[${JSON.stringify(key)}]`, key, undefined);
    return window;

    function loadCurrent(w: SignatureWindow, s: Record<string, unknown>): SignatureWindow {
      const { signatures, orders, horizon } = s;
      if (!Array.isArray(signatures))
        throw new InvalidArgumentError('saved.signatures', 'an array', signatures);
      if (orders !== undefined && (!Array.isArray(orders) || orders.length !== signatures.length)) {
        throw new InvalidArgumentError('saved.orders', 'an array as long as saved.signatures', orders);
      }
      for (const [i, sig] of signatures.entries()) {
        const o = (orders as unknown[] | undefined)?.[i];
        w.#load(`saved.signatures[${i}]`, sig, parseSavedOrder(`saved.orders[${i}]`, o));
      }
      w.#horizon = parseSavedOrder('saved.horizon', horizon);
      return w;
    }
  }

  #load(path: string, signature: unknown, order: Order | undefined): void {
    if (typeof signature !== 'string' || signature.length === 0) {
      throw new InvalidArgumentError(path, 'a non-empty signature string', signature);
    }
    // A save that holds a signature twice keeps its first (oldest) position.
    if (!this.has(signature)) this.#push(signature, order);
  }

  /** Calls `f` with each live slot, oldest first. */
  #each(f: (slot: number) => void): void {
    const len = this.#ring.length;
    for (let k = 0, i = this.#start; k < this.#count; k++, i = i + 1 === len ? 0 : i + 1) f(i);
  }

  #orderList(): (Order | undefined)[] {
    const out: (Order | undefined)[] = [];
    this.#each((i) => out.push(this.#orders?.[i]));
    return out;
  }

  #push(signature: string, order: Order | undefined): void {
    let ring = this.#ring;
    let slot: number;
    if (this.#count === ring.length) {
      // Full ring (still filling up, or loading an over-capacity save): grow it by one slot.
      if (this.#start !== 0) {
        // Only reachable when loading into a window that has evicted; keeps the ring oldest-first.
        const live = this.signatures();
        const orders = this.#orders === undefined ? undefined : this.#orderList();
        this.#ring = ring = live;
        this.#orders = orders;
        this.#start = 0;
      }
      slot = ring.length;
      ring.push(signature);
    } else {
      slot = this.#start + this.#count;
      if (slot >= ring.length) slot -= ring.length;
      ring[slot] = signature;
    }
    if (order !== undefined || this.#orders !== undefined) {
      const orders = (this.#orders ??= new Array<Order | undefined>(ring.length).fill(undefined));
      orders[slot] = order;
    }
    this.#count++;
    this.#index?.add(signature);
  }

  #evictOldest(): void {
    const slot = this.#start;
    const signature = this.#ring[slot] as string;
    this.#ring[slot] = undefined;
    let order: Order | undefined;
    if (this.#orders !== undefined) {
      order = this.#orders[slot];
      this.#orders[slot] = undefined;
    }
    this.#start = slot + 1 === this.#ring.length ? 0 : slot + 1;
    this.#count--;
    this.#index?.delete(signature);
    if (order !== undefined && (this.#horizon === undefined || order > this.#horizon)) this.#horizon = order;
  }
}

// A scan compares string pointers first, so up to a few dozen entries it costs less than hashing
// the signature; 32 keeps the worst scan short while every realistic dedup window (4..16) scans.
const INDEX_THRESHOLD = 32;

function isOneToN(keys: string[]): boolean {
  if (keys.length === 0) return false;
  const set = new Set(keys);
  for (let i = 1; i <= keys.length; i++) if (!set.has(String(i))) return false;
  return true;
}

function parseSavedOrder(path: string, value: unknown): Order | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return orderFromString(value);
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  throw new InvalidArgumentError(path, 'null or an integer string', value);
}

// A window's shapes (the window, its entries) live only as long as some window does: a program
// that drops its last window lets a full GC free them, and admit() and its helpers fall back to
// the interpreter. A window taken through fresh, duplicate, eviction and stale answers, and one
// read back from its saved form, are made with the first window and kept by the class from then on
// (see pinShapes).
function pinnedWindows(): unknown[] {
  const window = new SignatureWindow({ capacity: 2 });
  for (const [signature, order] of [
    ['a', 1],
    ['a', 1],
    ['b', 2],
    ['c', 3],
    ['d', 1],
  ] as const) {
    window.admit(signature, order);
  }
  window.admit('e');
  window.admit('f', 10n);
  return [window, SignatureWindow.from(window.toJSON(), { capacity: 2 })];
}
