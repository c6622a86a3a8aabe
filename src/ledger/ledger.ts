import { InvalidArgumentError, InvalidOptionError, type StoreError } from '../core/errors.js';
import { jsonCopy } from '../core/json-copy.js';
import { optionWithinLimit, withinLimit } from '../core/limits.js';
import { type Emit, type Observer, observing } from '../core/observer.js';
import { pinShapes } from '../core/pin-shapes.js';
import {
  amount,
  isPlainObject,
  isWellFormed,
  keysOf,
  knownKeys,
  nonEmptyString,
  nonEmptyStringArg,
  type Order,
  optionalOrder,
  orderFromString,
  orderToString,
  positiveInt,
} from '../core/validate.js';
import { MAX_DELTAS, metaText, SIGNATURE_HINT } from '../store/apply-command.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type {
  Balances,
  JournalEntry,
  JournalQuery,
  JsonValue,
  LedgerApplyCommand,
  LedgerApplyResult,
  LedgerResolveResult,
  Store,
  WindowState,
} from '../store/store.js';
import { type SeenFilter, seenFilterOption } from '../windows/seen-filter.js';
import { checkQuery, ownerArg, scopeArg } from './arguments.js';
import { observed } from './observed.js';
import { preCheckId, rebuildFrom, type SeenQuery, seenArgs, seenIn } from './pre-check.js';

/** Options of {@link createLedger}. */
export interface LedgerOptions {
  /** Where the windows, balances and journal live. Default: a new {@link memoryStore}. */
  store?: Store;
  /**
   * Window capacity per owner. Derive it from your delivery bound and write the derivation
   * beside it (DESIGN §3.2). For settlements: 4 = 2 settlements per round x 2 rounds.
   */
  capacity: number;
  /**
   * Track the highest evicted order and answer `stale` for an absent signature at or below it
   * (only for entries that carry an `order`). Default `true`: a too-small window fails safe.
   */
  horizon?: boolean;
  /** The ledger's name; several ledgers can share one store. Default `'default'`. */
  name?: string;
  /**
   * Told every apply and resolve answer (`ledger.apply`, `ledger.resolve`, with `failed` on a store
   * error): see docs/observability.md. None by default: an unobserved ledger builds no event.
   */
  observer?: Observer;
  /**
   * A Bloom pre-check in front of {@link Ledger.seen}: a signature it never saw here answers
   * `false` without the store read. `apply` adds every signature it is given. Advisory only:
   * `apply` still decides every entry (docs/pre-checks.md). None by default.
   */
  preCheck?: SeenFilter;
}

/** One event to apply exactly once. */
export interface LedgerEntry {
  /** Whose window and balances (a player, an account). The window has one writer: this owner. */
  owner: string;
  /** The event's self-contained dedup key, usually from {@link defineSignature}. */
  signature: string;
  /** Field → change, in integer minor units (`bigint` or safe integer). Applied all or nothing. */
  deltas: Record<string, bigint | number>;
  /** Where the money is booked (a room, a merchant) for per-scope reconciliation. */
  scope?: string;
  /** A per-owner monotonic-ish key (e.g. the time part of a snowflake id), for the horizon. */
  order?: Order;
  /** Free JSON kept in the journal. */
  meta?: JsonValue;
}

/**
 * What {@link Ledger.apply} returns: an outcome, never an exception, for duplicates and stale.
 * A union on `outcome`: after `r.outcome === 'applied'`, `r.seq` is a `number`.
 *
 * @example
 * ```ts
 * const ledger = createLedger({ capacity: 4 });
 * const r = await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } });
 * const seq: number = r.outcome === 'applied' ? r.seq : 0; // no `?? 0` needed
 * seq; // 1
 * ```
 */
export type ApplyResult = LedgerApplyResult;

/**
 * What {@link Ledger.resolve} returns: `applied` (with `seq`), `duplicate` or `unknown`, a
 * discriminated union on `outcome`.
 *
 * @example
 * ```ts
 * const ledger = createLedger({ capacity: 4 });
 * const r: ResolveResult = await ledger.resolve({ owner: 'p1', signature: 's1', deltas: { coins: 1 } });
 * r.outcome === 'applied' ? r.seq : undefined; // 1
 * ```
 */
export type ResolveResult = LedgerResolveResult;

/** An exactly-once ledger: see {@link createLedger}. */
export interface Ledger {
  readonly name: string;
  readonly capacity: number;
  readonly store: Store;
  /**
   * Window check, balance change and journal append in one atomic step of the store.
   *
   * Invalid input (a float amount, a missing owner, a size over `LIMITS`) rejects with
   * `ERR_INVALID_ARGUMENT` before the store is called: nothing changed. A store failure rejects
   * with a {@link StoreError} (`ERR_STORE`) that says what is safe: `outcome: 'not-applied'`
   * (nothing happened) or `'unknown'` (the entry **may have been applied**: the command reached
   * the store and its reply was lost, or it timed out), and `retriable` (whether trying again may
   * succeed). A retry with the same entry is always safe: an entry that was applied answers
   * `duplicate`, or `stale` once it has left the window, which `ledger.resolve` settles.
   *
   * @example
   * ```ts
   * const ledger = createLedger({ capacity: 4 });
   * const entry = { owner: 'p1', signature: 's1', deltas: { coins: 5 } };
   * async function applyWithRetry(attempts = 3) {
   *   for (let i = 1; ; i++) {
   *     try {
   *       return await ledger.apply(entry); // the same entry every time: never booked twice
   *     } catch (err) {
   *       if (!isOnceflowError(err, 'ERR_STORE') || !(err as StoreError).retriable || i === attempts) throw err;
   *       await new Promise((r) => setTimeout(r, 100 * 2 ** i));
   *     }
   *   }
   * }
   * (await applyWithRetry()).outcome; // 'applied'
   * (await applyWithRetry()).outcome; // 'duplicate'
   * ```
   */
  apply(entry: LedgerEntry): Promise<ApplyResult>;
  /**
   * The way out of a `stale` answer: settles `entry` from the owner's window and retained journal,
   * in one atomic step of the store, with the same validation as {@link Ledger.apply}.
   *
   * - `duplicate`: the window or the retained journal holds the signature; nothing changes.
   * - `applied`: the journal provably covers the entry and does not hold it, so it was never
   *   applied: it is applied now exactly as `apply` applies a fresh entry (balances, scope totals,
   *   journal, and the window, as the newest signature whatever the horizon, so a repeat is a
   *   `duplicate`). `seq` is its journal number.
   * - `unknown`: not provable either way (retention dropped entries that may be this one);
   *   nothing changes. Reconcile it by hand: journal, totals, the source of the event.
   *
   * "Provably covers": the store knows the highest order among the owner's journal entries that
   * retention dropped, and whether it dropped one without an order. An entry whose order is above
   * that, or without an order when none without one was dropped, and absent from the retained
   * journal, was never applied; with nothing dropped, absence alone proves it. This holds under
   * one assumption: **an event's signature always carries the same order (or always none)**, as
   * when both come from the event itself. The window's capacity plays no part: resolve never
   * guesses, so it may answer `unknown` for an entry `apply` would call fresh. Any entry may be
   * resolved, stale or not; its cost grows with the owner's retained journal (read newest first,
   * until the signature is found or the journal is read through).
   *
   * @example
   * ```ts
   * // 2 = at most 2 events of one owner in flight at a time (DESIGN §3.2).
   * const ledger = createLedger({ capacity: 2 });
   * const e = (n: number) => ({ owner: 'p1', signature: `s${n}`, deltas: { coins: n }, order: n });
   * for (const n of [1, 2, 3]) await ledger.apply(e(n)); // s1 leaves the window: horizon 1
   * (await ledger.apply(e(1))).outcome; // 'stale'
   * // The journal holds s1: a repeat.
   * (await ledger.resolve(e(1))).outcome; // 'duplicate'
   * const late = { ...e(0), signature: 'late' };
   * (await ledger.apply(late)).outcome; // 'stale'
   * // Nothing was dropped from the journal and it does not hold `late`: new, applied now.
   * (await ledger.resolve(late)).outcome; // 'applied'
   * (await ledger.apply(late)).outcome; // 'duplicate'
   * await ledger.balances('p1'); // { coins: 6n }
   * ```
   */
  resolve(entry: LedgerEntry): Promise<ResolveResult>;
  /**
   * Read-only "seen before?" for a buffer layer, before work an event should not get twice:
   * `true` when the owner's window holds the signature (the store says so: `apply` would answer
   * `duplicate`, so the event may be dropped); `false` when it does not, **or** when the
   * `preCheck` filter proves this ledger never saw it (no store read). `false` is advisory: go on
   * and `apply`, which decides (another process, or an id the filter forgot, gets `duplicate`
   * there). Emits `ledger.pre-check` (`skipped`, `read-seen`, `read-unseen`).
   *
   * @example
   * ```ts
   * const ledger = createLedger({ capacity: 4, preCheck: new SeenFilter({ expected: 10_000 }) });
   * const entry = { owner: 'p1', signature: 's1', deltas: { coins: 5 } };
   * await ledger.seen(entry); // false (the filter answered: no store read)
   * await ledger.apply(entry);
   * await ledger.seen(entry); // true (the filter said maybe, the window holds it)
   * ```
   */
  seen(query: SeenQuery): Promise<boolean>;
  /**
   * Adds every signature of each owner's window to the `preCheck` filter (after a restart without
   * a saved filter): one window read per owner, 16 in flight; at most 100,000 owners per call
   * (page a larger population). Resolves to the signatures added.
   *
   * @example
   * ```ts
   * const store = memoryStore();
   * await createLedger({ store, capacity: 4 }).apply({ owner: 'p1', signature: 's1', deltas: { coins: 1 } });
   * const restarted = createLedger({ store, capacity: 4, preCheck: new SeenFilter({ expected: 10_000 }) });
   * await restarted.rebuildPreCheck(['p1']); // 1
   * await restarted.seen({ owner: 'p1', signature: 's1' }); // true
   * ```
   */
  rebuildPreCheck(owners: Iterable<string>): Promise<number>;
  /** An owner's balances (`{}` when it never had an entry). */
  balances(owner: string): Promise<Balances>;
  /** An owner's window, oldest first, and its horizon. */
  window(owner: string): Promise<WindowState>;
  /** Applied entries, oldest first, filtered by owner and/or scope. */
  journal(query?: JournalQuery): Promise<JournalEntry[]>;
  /** Everything booked under `scope`: must equal what that scope settled. */
  totals(scope: string): Promise<Balances>;
}

const LEDGER_OPTIONS = keysOf<LedgerOptions>({
  store: true,
  capacity: true,
  horizon: true,
  name: true,
  observer: true,
  preCheck: true,
});
const ENTRY_FIELDS = keysOf<LedgerEntry>({
  owner: true,
  signature: true,
  deltas: true,
  scope: true,
  order: true,
  meta: true,
});
const ENTRY_FIELD_SET: ReadonlySet<string> = new Set(ENTRY_FIELDS);

/**
 * Creates a ledger that applies each event's deltas **exactly once** per owner, whatever the
 * delivery does (repeats, replays after a queue recovery, late arrivals from another room).
 *
 * Duplicates and stale entries are outcomes, not errors. Invalid input (a float amount, NaN, a
 * missing owner, a signature over `LIMITS.signatureBytes`) throws an `ERR_INVALID_ARGUMENT` that
 * names the field and changes nothing. An `ERR_STORE` may mean the entry was applied (see
 * {@link Ledger.apply}): retry with the same entry.
 *
 * @example
 * ```ts
 * const settlement = defineSignature([
 *   ['room', 'string'], ['round', 'int'], ['net', 'int'], ['final', 'bool'],
 * ]);
 * // 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap (DESIGN §3.2).
 * const ledger = createLedger({ capacity: 4 });
 * const s = { room: 'lobby-7', round: 42, net: -300, final: false };
 * await ledger.apply({ owner: 'player-1', signature: settlement(s), deltas: { coins: s.net }, scope: s.room });
 * const again = await ledger.apply({ owner: 'player-1', signature: settlement(s), deltas: { coins: s.net }, scope: s.room });
 * again.outcome; // 'duplicate'
 * again.balances; // { coins: -300n }
 * ```
 */
export function createLedger(options: LedgerOptions): Ledger {
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, LEDGER_OPTIONS);
  const capacity = positiveInt('capacity', options.capacity);
  const store = options.store ?? memoryStore();
  if (typeof store?.ledgerApply !== 'function') {
    throw new InvalidOptionError('store', 'a Store (memoryStore(), createRedisStore(...), ...)', store);
  }
  const horizon = options.horizon ?? true;
  if (typeof horizon !== 'boolean') throw new InvalidOptionError('horizon', 'a boolean', horizon);
  const name =
    options.name === undefined
      ? 'default'
      : optionWithinLimit('name', nonEmptyString('name', options.name), 'nameBytes');
  const emit = observing(options.observer, 'observer');
  return new ExactLedger(
    name,
    capacity,
    store,
    horizon,
    emit,
    seenFilterOption('preCheck', options.preCheck),
  );
}

/**
 * The ledger {@link createLedger} returns. A class, not an object of closures: V8 inlines
 * prototype methods into their callers' optimised code for good, where closures made per ledger
 * are inlined as that ledger's objects and every caller optimised with them is thrown away once
 * the ledger is collected (seen on the limiter: a fresh one per run after a GC takes ~1.5x longer
 * per take with closures, scripts/limiter-memory-ab.mjs).
 */
class ExactLedger implements Ledger {
  // Private, behind getters: what `apply` decides with cannot be changed from outside (a
  // `readonly` public field is read-only only to TypeScript).
  readonly #name: string;
  readonly #capacity: number;
  readonly #store: Store;
  readonly #horizon: boolean;
  readonly #emit: Emit | undefined;
  readonly #preCheck: SeenFilter | undefined;

  constructor(
    name: string,
    capacity: number,
    store: Store,
    horizon: boolean,
    emit: Emit | undefined,
    preCheck?: SeenFilter,
  ) {
    pinShapes(ExactLedger, pinnedLedgers);
    this.#name = name;
    this.#capacity = capacity;
    this.#store = store;
    this.#horizon = horizon;
    this.#emit = emit;
    this.#preCheck = preCheck;
  }

  get name(): string {
    return this.#name;
  }

  get capacity(): number {
    return this.#capacity;
  }

  get store(): Store {
    return this.#store;
  }

  // Not `async`: an async function that returns the store's promise wraps it in a second one
  // and pays extra microtask turns per call. Invalid input still rejects, never throws.
  apply(entry: LedgerEntry): Promise<ApplyResult> {
    let cmd: LedgerApplyCommand;
    try {
      cmd = this.#toCommand(entry);
      // Before the store call, so a `seen` racing this apply already reads the store: an entry the
      // store then refuses (stale, a failure) only costs a later `seen` one read.
      if (this.#preCheck !== undefined) this.#preCheck.add(preCheckId(cmd.owner, cmd.signature));
      const answer = this.#store.ledgerApply(cmd);
      const emit = this.#emit;
      return emit === undefined ? answer : observed(answer, emit, 'apply', this.#name, cmd.owner);
    } catch (error) {
      // Invalid input, or a store that throws instead of rejecting: a rejection either way.
      return Promise.reject(error);
    }
  }

  resolve(entry: LedgerEntry): Promise<ResolveResult> {
    try {
      const cmd = this.#toCommand(entry);
      if (typeof this.#store.ledgerResolve !== 'function') {
        throw new InvalidOptionError(
          'store',
          'a Store with ledgerResolve (to resolve entries)',
          this.#store.kind,
        );
      }
      // A resolve may book the entry into the window, as an apply does: the filter learns it first.
      if (this.#preCheck !== undefined) this.#preCheck.add(preCheckId(cmd.owner, cmd.signature));
      const answer = this.#store.ledgerResolve(cmd);
      const emit = this.#emit;
      return emit === undefined ? answer : observed(answer, emit, 'resolve', this.#name, cmd.owner);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async seen(query: SeenQuery): Promise<boolean> {
    const { owner, signature } = seenArgs(query, ENTRY_FIELDS);
    return seenIn(this.#store, this.#name, this.#preCheck, this.#emit, owner, signature);
  }

  async rebuildPreCheck(owners: Iterable<string>): Promise<number> {
    if (this.#preCheck === undefined) {
      throw new InvalidOptionError(
        'preCheck',
        'a SeenFilter to rebuild (createLedger({ preCheck }))',
        undefined,
      );
    }
    return rebuildFrom(this.#store, this.#name, this.#preCheck, owners);
  }

  async balances(owner: string): Promise<Balances> {
    return this.#store.ledgerBalances(this.#name, ownerArg('owner', owner));
  }

  async window(owner: string): Promise<WindowState> {
    return this.#store.ledgerWindow(this.#name, ownerArg('owner', owner));
  }

  async journal(query: JournalQuery = {}): Promise<JournalEntry[]> {
    return this.#store.ledgerJournal(this.#name, checkQuery(query));
  }

  async totals(scope: string): Promise<Balances> {
    return this.#store.ledgerScopeTotals(this.#name, scopeArg('scope', scope));
  }

  // Validation happens before the store is called, so invalid input never changes state.
  #toCommand(entry: LedgerEntry): LedgerApplyCommand {
    if (!isPlainObject(entry)) throw new InvalidArgumentError('entry', 'an object', entry);
    // A misspelt `order` or `scope` would book the entry without its horizon or its scope.
    // `for...in` allocates nothing on this hot path (Object.keys copies); knownKeys then reads own
    // keys only, so an inherited enumerable key (a polluted prototype) passes.
    for (const k in entry) if (!ENTRY_FIELD_SET.has(k)) knownKeys('', entry, ENTRY_FIELDS, 'argument');
    // Sizes too (LIMITS): a store pays for every byte, and on Redis other clients wait meanwhile.
    const owner = ownerArg('owner', entry.owner);
    const signature = withinLimit(
      'signature',
      nonEmptyStringArg('signature', entry.signature),
      'signatureBytes',
      SIGNATURE_HINT,
    );
    const rawDeltas = entry.deltas;
    if (!isPlainObject(rawDeltas)) {
      throw new InvalidArgumentError('deltas', 'an object of field → bigint or safe integer', rawDeltas);
    }
    const deltas: (readonly [string, bigint])[] = [];
    // Own fields only: `for...in` would also book a field inherited from a polluted Object.prototype.
    const fields = Object.keys(rawDeltas);
    if (fields.length > MAX_DELTAS) {
      throw new InvalidArgumentError('deltas', `at most ${MAX_DELTAS} fields`, fields.length);
    }
    for (const field of fields) {
      // `__proto__` would be set as an object's prototype, not a field, wherever balances are
      // plain objects (results, JSON): it could be applied but never shown. Refuse it.
      if (field.length === 0 || field === '__proto__' || !isWellFormed(field)) {
        throw new InvalidArgumentError(
          'deltas',
          'field names that are not empty, not `__proto__` and well-formed Unicode',
          field,
        );
      }
      withinLimit('deltas', field, 'fieldBytes');
      const value = rawDeltas[field];
      // The valid cases first: the `deltas.<field>` path is only an error message's, and building
      // it on every call costs ~4% of an apply (`node bench/run.mjs ledger`, with it built always).
      const exact = typeof value === 'bigint' || (typeof value === 'number' && Number.isSafeInteger(value));
      deltas.push([field, exact ? BigInt(value) : amount(`deltas.${field}`, value)]);
    }
    const scope = entry.scope === undefined ? undefined : scopeArg('scope', entry.scope);
    const raw = optionalOrder('order', entry.order);
    // One representation per value (a safe integer when it fits, else a bigint), whatever the
    // caller passed: `0n` and `0` are the same order in every store.
    const order = raw === undefined ? undefined : orderFromString(orderToString(raw));
    const meta = entry.meta === undefined ? undefined : jsonCopy(entry.meta, 'meta');
    if (meta !== undefined) metaText(meta);
    return {
      ledger: this.#name,
      capacity: this.#capacity,
      horizon: this.#horizon,
      owner,
      signature,
      deltas,
      scope,
      order,
      meta,
    };
  }
}

// The shapes of a ledger's objects (its commands, results, the memory store's owners, windows and
// journal entries) live only as long as some object has them: a program that drops its last
// ledger (a test, a bench run, a ledger per batch) lets a full GC free them, and every optimized
// function that embedded them falls back to the interpreter. One ledger on the memory store, taken
// through applied, duplicate and stale answers (with and without scope, order and meta, number and
// bigint amounts), is made with the first ledger and kept by the class from then on (see pinShapes).
function pinnedLedgers(): unknown[] {
  const ledger = createLedger({ capacity: 2, horizon: true });
  const kept: unknown[] = [ledger];
  const entries: LedgerEntry[] = [
    { owner: 'pinned', signature: 'a', deltas: { coins: 1 }, scope: 'room', order: 1 },
    { owner: 'pinned', signature: 'a', deltas: { coins: 1 }, scope: 'room', order: 1 },
    { owner: 'pinned', signature: 'b', deltas: { coins: -2n, gems: 3 }, order: 2, meta: { round: 1 } },
    { owner: 'pinned', signature: 'c', deltas: {}, order: 3 },
    { owner: 'pinned', signature: 'd', deltas: { coins: 1 }, scope: 'room', order: 1 },
    { owner: 'pinned', signature: 'e', deltas: { coins: 1 } },
  ];
  for (const entry of entries) kept.push(ledger.apply(entry).catch(() => undefined));
  return kept;
}
