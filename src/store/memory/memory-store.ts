import { type Clock, systemClock, wholeMs } from '../../core/clock.js';
import { InvalidArgumentError, InvalidOptionError, StoreError } from '../../core/errors.js';
import { ownRecord } from '../../core/own-record.js';
import { isPlainObject, keysOf, knownKeys, nonNegativeInt, type Order } from '../../core/validate.js';
import { SignatureWindow } from '../../windows/signature-window.js';
import { checkCapacity, checkCommandSizes, checkDeltaPairs } from '../apply-command.js';
import type {
  IdempotencyBeginCommand,
  IdempotencyBeginReply,
  IdempotencyRecordState,
} from '../idempotency.js';
import type {
  LimiterAdjustCommand,
  LimiterAdjustReply,
  LimiterDeleteCommand,
  LimiterTakeCommand,
  LimiterTakeReply,
} from '../limiter.js';
import type { LeaseReply, VersionUpsertReply } from '../ordering.js';
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
} from '../store.js';
import { MemoryIdempotencyRecords } from './idempotency.js';
import { MemoryLimiterBackend } from './limiter.js';
import { memoryOrderingOps } from './ordering.js';

const STORE_OPTIONS = keysOf<MemoryStoreOptions>({ clock: true, journal: true });

// A memory store's operation checks what can fail (the clock, the copy of meta) before it changes
// anything, so a failure took no effect; what failed (a broken clock) stays broken until fixed.
const NOT_APPLIED = { outcome: 'not-applied', retriable: false } as const;

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /** Time source for journal timestamps, limiter decisions, idempotency leases and ttls. Default: the wall clock. */
  clock?: Clock;
  /**
   * Journal retention. `maxEntries` bounds the journal per ledger: the oldest entries are dropped
   * one at a time (the journal is a record for reconciliation, not dedup state: dropping it never
   * lets a repeat through, and scope totals and balances stay exact). Default: the newest
   * {@link DEFAULT_JOURNAL_ENTRIES} per ledger; `Infinity` keeps every entry (memory then grows by
   * about 150 bytes per applied event with one delta, forever).
   */
  journal?: { maxEntries?: number };
}

/**
 * The memory store's default journal retention per ledger. An embedded default must not grow
 * without bound: 100 000 entries x ~150 bytes (one delta: node --expose-gc scripts/micro-costs.mjs
 * journal) is ~15 MB at most, and at 1 000 applies/s it still covers the last ~100 s for a reconciliation by journal; per-scope totals
 * and balances never depend on it. Pass `journal: { maxEntries: Infinity }` to keep everything.
 *
 * @example
 * ```ts
 * DEFAULT_JOURNAL_ENTRIES; // 100000
 * // A reconciliation that reads further back keeps more: here ten times the default.
 * const ledger = createLedger({ store: memoryStore({ journal: { maxEntries: 10 * DEFAULT_JOURNAL_ENTRIES } }), capacity: 4 });
 * (await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } })).outcome; // 'applied'
 * (await ledger.journal({ owner: 'p1' })).length; // 1
 * ```
 */
export const DEFAULT_JOURNAL_ENTRIES = 100_000;

interface OwnerState {
  window: SignatureWindow;
  balances: Map<string, bigint>;
  /** The owner's last journal sequence number: numbered per owner, as on Redis (no ledger-wide counter there). */
  seq: number;
  /**
   * What retention dropped of this owner's journal, for `ledgerResolve`: how many entries (always
   * the oldest: the journal drops in apply order), the highest order among them, and whether one
   * had no order. Another owner's applies can drop this owner's entries (retention is per ledger),
   * so it is written where entries are dropped, not where they are added.
   */
  dropped: number;
  droppedOrder: Order | undefined;
  droppedUnordered: boolean;
}

/**
 * A journal entry as the memory store keeps it: one object, every field present (one hidden class
 * for all), a single delta as two fields rather than an object of its own; {@link JournalEntry}s
 * are built from it when read. An entry lives as long as the retention, so what it costs is paid
 * ~100 000 times (153 bytes with one delta: node --expose-gc scripts/micro-costs.mjs journal; a
 * `JournalEntry` kept as it is read would hold one object more per entry, its `deltas`).
 */
interface StoredEntry {
  readonly seq: number;
  readonly owner: string;
  readonly signature: string;
  /** The only delta's field and amount (most entries have one), else `undefined`. */
  readonly field: string | undefined;
  readonly amount: bigint | undefined;
  /** Two or more deltas, else `undefined`. */
  readonly deltas: Balances | undefined;
  readonly at: number;
  readonly scope: string | undefined;
  readonly order: Order | undefined;
  readonly meta: JsonValue | undefined;
}

interface LedgerState {
  owners: Map<string, OwnerState>;
  journal: StoredEntry[];
  journalHead: number;
  scopeTotals: Map<string, Map<string, bigint>>;
}

/**
 * The embedded, in-process store: the default, and the reference model every other store is
 * tested against. Each operation is one synchronous block, so it is atomic by construction.
 * State lives as long as the process; use `onceflow/redis` or `onceflow/postgres` to share it.
 *
 * @example
 * ```ts
 * const ledger = createLedger({ store: memoryStore({ journal: { maxEntries: 100_000 } }), capacity: 4 });
 * ```
 */
export function memoryStore(options: MemoryStoreOptions = {}): Store {
  return new MemoryStore(options);
}

/**
 * The store behind {@link memoryStore}. A class, not an object of closures: V8 inlines prototype
 * methods into their callers' optimised code for good, where a closure made per store is inlined
 * as that store's object, and every caller optimised with it is thrown away once the store is
 * collected (seen on the limiter: a fresh one per run after a GC takes ~1.5x longer per take with
 * closures, scripts/limiter-memory-ab.mjs).
 */
class MemoryStore implements Store {
  readonly kind = 'memory';
  readonly #clock: Clock;
  readonly #maxEntries: number;
  readonly #ledgers = new Map<string, LedgerState>();
  readonly #limiter: MemoryLimiterBackend;
  readonly #ordering = memoryOrderingOps();
  readonly #idempotency: MemoryIdempotencyRecords;

  constructor(options: MemoryStoreOptions) {
    if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object', options);
    knownKeys('', options, STORE_OPTIONS);
    const clock: Clock = (options as MemoryStoreOptions).clock ?? systemClock;
    if (typeof clock?.now !== 'function')
      throw new InvalidOptionError('clock', 'an object with now()', clock);
    if (options.journal !== undefined && !isPlainObject(options.journal)) {
      throw new InvalidOptionError('journal', 'an object like { maxEntries: 100000 }', options.journal);
    }
    // `maxEntriesPerOwner` (the Redis store's) is known here only to be refused with its reason below.
    if (options.journal !== undefined)
      knownKeys('journal', options.journal, ['maxEntries', 'maxEntriesPerOwner']);
    if ((options.journal as { maxEntriesPerOwner?: unknown } | undefined)?.maxEntriesPerOwner !== undefined) {
      throw new InvalidOptionError(
        'journal.maxEntriesPerOwner',
        'absent on the memory store: its retention bounds the whole ledger, `journal.maxEntries`',
        (options.journal as { maxEntriesPerOwner?: unknown }).maxEntriesPerOwner,
      );
    }
    this.#clock = clock;
    this.#maxEntries =
      options.journal?.maxEntries === undefined
        ? DEFAULT_JOURNAL_ENTRIES
        : options.journal.maxEntries === Number.POSITIVE_INFINITY
          ? Number.POSITIVE_INFINITY
          : nonNegativeInt('journal.maxEntries', options.journal.maxEntries);
    this.#limiter = new MemoryLimiterBackend(clock);
    this.#idempotency = new MemoryIdempotencyRecords(clock);
  }

  ledgerApply(cmd: LedgerApplyCommand): Promise<LedgerApplyResult> {
    try {
      return Promise.resolve(this.#apply(cmd));
    } catch (err) {
      // Nothing was changed (#apply reads and copies what can fail first): a store failure.
      return Promise.reject(
        err instanceof InvalidArgumentError || err instanceof StoreError
          ? err
          : new StoreError('ledgerApply', err, NOT_APPLIED),
      );
    }
  }

  ledgerResolve(cmd: LedgerApplyCommand): Promise<LedgerResolveResult> {
    try {
      return Promise.resolve(this.#resolve(cmd));
    } catch (err) {
      // As for ledgerApply: what can fail is read first, so nothing was changed.
      return Promise.reject(
        err instanceof InvalidArgumentError || err instanceof StoreError
          ? err
          : new StoreError('ledgerResolve', err, NOT_APPLIED),
      );
    }
  }

  // Answered synchronously (the contract allows it of a store deciding in this process): the
  // limiter then builds its decision at once, with no promise per take. A failure still rejects.
  limiterTake(cmd: LimiterTakeCommand): LimiterTakeReply | Promise<LimiterTakeReply> {
    try {
      return this.#limiter.take(cmd);
    } catch (err) {
      // A malformed command (a cost, a time out of range) is the caller's error; anything else
      // (the store's clock answering NaN is a StoreError already) the store's. Nothing was
      // decided or charged either way.
      return Promise.reject(
        err instanceof InvalidArgumentError || err instanceof StoreError
          ? err
          : new StoreError('limiterTake', err, NOT_APPLIED),
      );
    }
  }

  limiterReset(namespace: string): Promise<number> {
    return Promise.resolve(this.#limiter.reset(namespace));
  }

  limiterDelete(cmd: LimiterDeleteCommand): Promise<number> {
    return Promise.resolve(this.#limiter.delete(cmd));
  }

  limiterAdjust(cmd: LimiterAdjustCommand): Promise<LimiterAdjustReply> {
    try {
      return Promise.resolve(this.#limiter.adjust(cmd));
    } catch (err) {
      return Promise.reject(
        err instanceof InvalidArgumentError || err instanceof StoreError
          ? err
          : new StoreError('limiterAdjust', err, NOT_APPLIED),
      );
    }
  }

  async ledgerBalances(ledger: string, owner: string): Promise<Balances> {
    return toRecord(this.#ledgers.get(ledger)?.owners.get(owner)?.balances);
  }

  async ledgerWindow(ledger: string, owner: string): Promise<WindowState> {
    const window = this.#ledgers.get(ledger)?.owners.get(owner)?.window;
    if (window === undefined) return { signatures: [] };
    const horizon = window.horizon;
    return horizon === undefined
      ? { signatures: window.signatures() }
      : { signatures: window.signatures(), horizon };
  }

  async ledgerJournal(ledger: string, query: JournalQuery): Promise<JournalEntry[]> {
    const state = this.#ledgers.get(ledger);
    if (state === undefined) return [];
    const limit = query.limit ?? Number.POSITIVE_INFINITY;
    const out: JournalEntry[] = [];
    for (let i = state.journalHead; i < state.journal.length && out.length < limit; i++) {
      const e = state.journal[i] as StoredEntry;
      if (query.after !== undefined && e.seq <= query.after) continue;
      if (query.owner !== undefined && e.owner !== query.owner) continue;
      if (query.scope !== undefined && e.scope !== query.scope) continue;
      const deltas: Balances =
        e.field !== undefined ? toBalances([[e.field, e.amount as bigint]]) : { ...e.deltas };
      const entry: { -readonly [K in keyof JournalEntry]: JournalEntry[K] } = {
        seq: e.seq,
        owner: e.owner,
        signature: e.signature,
        deltas,
        at: e.at,
      };
      if (e.scope !== undefined) entry.scope = e.scope;
      if (e.order !== undefined) entry.order = e.order;
      if (e.meta !== undefined) entry.meta = structuredClone(e.meta);
      out.push(entry);
    }
    return out;
  }

  async ledgerScopeTotals(ledger: string, scope: string): Promise<Balances> {
    return toRecord(this.#ledgers.get(ledger)?.scopeTotals.get(scope));
  }

  checkpointSave(name: string, revision: number, data: string): Promise<'saved' | 'stale'> {
    return this.#ordering.checkpointSave(name, revision, data);
  }

  checkpointLoad(name: string): Promise<{ revision: number; data: string } | undefined> {
    return this.#ordering.checkpointLoad(name);
  }

  versionUpsert(gate: string, key: string, version: string, value: string): Promise<VersionUpsertReply> {
    return this.#ordering.versionUpsert(gate, key, version, value);
  }

  versionGet(gate: string, key: string): Promise<{ version: string; value: string } | undefined> {
    return this.#ordering.versionGet(gate, key);
  }

  timestampAdvance(name: string, ms: number): Promise<number> {
    return this.#ordering.timestampAdvance(name, ms);
  }

  leaseRenew(name: string, run: string, ms: number, takeover: number | undefined): Promise<LeaseReply> {
    return this.#ordering.leaseRenew(name, run, ms, takeover);
  }

  idempotencyBegin(command: IdempotencyBeginCommand): Promise<IdempotencyBeginReply> {
    return this.#idempotency.idempotencyBegin(command);
  }

  idempotencyRenew(name: string, key: string, token: string, leaseMs: number): Promise<boolean> {
    return this.#idempotency.idempotencyRenew(name, key, token, leaseMs);
  }

  idempotencyComplete(
    ...call: Parameters<MemoryIdempotencyRecords['idempotencyComplete']>
  ): Promise<boolean> {
    return this.#idempotency.idempotencyComplete(...call);
  }

  idempotencyRelease(name: string, key: string, token: string): Promise<boolean> {
    return this.#idempotency.idempotencyRelease(name, key, token);
  }

  idempotencyGet(name: string, key: string): Promise<IdempotencyRecordState> {
    return this.#idempotency.idempotencyGet(name, key);
  }

  #ledgerOf(name: string): LedgerState {
    let state = this.#ledgers.get(name);
    if (state === undefined) {
      state = { owners: new Map(), journal: [], journalHead: 0, scopeTotals: new Map() };
      this.#ledgers.set(name, state);
    }
    return state;
  }

  #apply(cmd: LedgerApplyCommand): LedgerApplyResult {
    // What can fail comes first, before any state changes: the deltas' form (the ledger checks
    // them, a direct caller may not), the clock (a caller's) and the copy of `meta`. An apply
    // happens whole or not at all (DESIGN §3.3).
    checkDeltaPairs(cmd.deltas);
    checkCapacity(cmd.capacity);
    checkCommandSizes(cmd);
    const at = this.#maxEntries > 0 ? journalTime(this.#clock, 'ledgerApply') : 0;
    const meta = cmd.meta === undefined ? undefined : structuredClone(cmd.meta);
    const state = this.#ledgerOf(cmd.ledger);
    const owner = ownerFor(state, cmd);
    const outcome = owner.window.admit(cmd.signature, cmd.horizon ? cmd.order : undefined);
    if (outcome !== 'fresh') return { outcome, balances: toRecord(owner.balances) };
    const seq = this.#book(state, owner, cmd, at, meta);
    return { outcome: 'applied', balances: toRecord(owner.balances), seq };
  }

  /**
   * ledgerResolve: the window, then the retained journal, then what retention dropped (see
   * OwnerState.dropped); the entry is booked as #apply books a fresh one, its signature entering
   * the window as the newest whatever the horizon, so a later repeat is a `duplicate` there.
   */
  #resolve(cmd: LedgerApplyCommand): LedgerResolveResult {
    checkDeltaPairs(cmd.deltas);
    checkCapacity(cmd.capacity);
    checkCommandSizes(cmd);
    const at = this.#maxEntries > 0 ? journalTime(this.#clock, 'ledgerResolve') : 0;
    const meta = cmd.meta === undefined ? undefined : structuredClone(cmd.meta);
    const state = this.#ledgerOf(cmd.ledger);
    const owner = ownerFor(state, cmd);
    if (owner.window.has(cmd.signature) || journalHolds(state, owner, cmd)) {
      return { outcome: 'duplicate', balances: toRecord(owner.balances) };
    }
    // With no journal kept, nothing booked can be found again: only a new owner is provably new
    // (as on Redis, where only a retention that keeps some entries keeps what they dropped).
    const proven = this.#maxEntries === 0 ? owner.seq === 0 : coversAbsence(owner, cmd.order);
    if (!proven) return { outcome: 'unknown', balances: toRecord(owner.balances) };
    owner.window.insert(cmd.signature, cmd.horizon ? cmd.order : undefined);
    const seq = this.#book(state, owner, cmd, at, meta);
    return { outcome: 'applied', balances: toRecord(owner.balances), seq };
  }

  /** Books an admitted entry: balances, scope totals, journal (and its retention). Returns its seq. */
  #book(
    state: LedgerState,
    owner: OwnerState,
    cmd: LedgerApplyCommand,
    at: number,
    meta: JsonValue | undefined,
  ): number {
    for (const [field, amount] of cmd.deltas) {
      owner.balances.set(field, (owner.balances.get(field) ?? 0n) + amount);
    }
    if (cmd.scope !== undefined) {
      let totals = state.scopeTotals.get(cmd.scope);
      if (totals === undefined) state.scopeTotals.set(cmd.scope, (totals = new Map()));
      for (const [field, amount] of cmd.deltas) totals.set(field, (totals.get(field) ?? 0n) + amount);
    }
    const seq = ++owner.seq;
    if (this.#maxEntries > 0) {
      const one = cmd.deltas.length === 1 ? cmd.deltas[0] : undefined;
      state.journal.push({
        seq,
        owner: cmd.owner,
        signature: cmd.signature,
        field: one?.[0],
        amount: one?.[1],
        deltas: one === undefined ? toBalances(cmd.deltas) : undefined,
        at,
        scope: cmd.scope,
        order: cmd.order,
        meta,
      });
      trimJournal(state, this.#maxEntries);
    } else {
      // No journal kept: every entry is dropped as it is booked.
      noteDropped(owner, cmd.order);
    }
    return seq;
  }
}

/** The command's owner, made on its first entry; its window takes the command's capacity. */
function ownerFor(state: LedgerState, cmd: LedgerApplyCommand): OwnerState {
  let owner = state.owners.get(cmd.owner);
  if (owner === undefined) {
    owner = {
      window: new SignatureWindow({ capacity: cmd.capacity }),
      balances: new Map(),
      seq: 0,
      dropped: 0,
      droppedOrder: undefined,
      droppedUnordered: false,
    };
    state.owners.set(cmd.owner, owner);
  } else if (owner.window.capacity !== cmd.capacity) {
    // A new capacity keeps every entry; an over-full window shrinks one eviction at a time on
    // its next insert, exactly as a window loaded from an over-capacity save does.
    owner.window = SignatureWindow.from(owner.window.toJSON(), { capacity: cmd.capacity });
  }
  return owner;
}

function noteDropped(owner: OwnerState, order: Order | undefined): void {
  owner.dropped++;
  if (order === undefined) owner.droppedUnordered = true;
  else if (owner.droppedOrder === undefined || order > owner.droppedOrder) owner.droppedOrder = order;
}

/**
 * Whether the owner's retained journal holds the command's signature. Read newest first (a
 * stale repeat is usually recent) and only until every retained entry of the owner was seen: at
 * worst the whole ledger's journal (100 000 entries by default: well under a millisecond), where
 * the apply path keeps no per-owner index it would pay for on every apply.
 */
function journalHolds(state: LedgerState, owner: OwnerState, cmd: LedgerApplyCommand): boolean {
  let left = owner.seq - owner.dropped;
  for (let i = state.journal.length - 1; left > 0 && i >= state.journalHead; i--) {
    const e = state.journal[i] as StoredEntry;
    if (e.owner !== cmd.owner) continue;
    if (e.signature === cmd.signature) return true;
    left--;
  }
  return false;
}

/**
 * Whether absence from the retained journal proves the entry was never applied: nothing of the
 * owner was dropped, or (a signature always carrying the same order) every dropped entry had a
 * lower order than this one, or, for an entry without an order, none without one was dropped.
 */
function coversAbsence(owner: OwnerState, order: Order | undefined): boolean {
  if (owner.dropped === 0) return true;
  if (order === undefined) return !owner.droppedUnordered;
  return owner.droppedOrder === undefined || order > owner.droppedOrder;
}

/**
 * The store clock's reading for a journal entry, checked as the limiter checks it: a NaN or a
 * fraction is the store's failure (a StoreError before anything changes), not the caller's.
 */
function journalTime(clock: Clock, operation: string): number {
  try {
    return wholeMs(clock.now(), 'store clock.now()');
  } catch (err) {
    throw new StoreError(operation, err, NOT_APPLIED);
  }
}

function trimJournal(state: LedgerState, maxEntries: number): void {
  if (state.journal.length - state.journalHead <= maxEntries) return;
  const oldest = state.journal[state.journalHead] as StoredEntry;
  noteDropped(state.owners.get(oldest.owner) as OwnerState, oldest.order);
  state.journalHead++;
  // Drop the dead prefix once it is as long as the live part: amortised O(1), memory <= 2x.
  if (state.journalHead * 2 >= state.journal.length) {
    state.journal = state.journal.slice(state.journalHead);
    state.journalHead = 0;
  }
}

// Plain objects of own data properties, whatever the field names (see ownRecord).
function toBalances(pairs: LedgerApplyCommand['deltas']): Balances {
  return ownRecord(pairs);
}

function toRecord(map: Map<string, bigint> | undefined): Balances {
  return map === undefined ? {} : ownRecord(map);
}
