import type { JsonValue } from '../core/json-copy.js';
import type { Order } from '../core/validate.js';

/** Balances of one owner: field → amount in minor units. */
export type Balances = Record<string, bigint>;

/** What a ledger apply decided. */
export type ApplyOutcome = 'applied' | 'duplicate' | 'stale';

/** One validated ledger apply, as a store receives it. */
export interface LedgerApplyCommand {
  /** The ledger's name: stores keep ledgers of different names apart. */
  readonly ledger: string;
  /** The window capacity (derived from a business limit, see DESIGN §3.2). */
  readonly capacity: number;
  /** Whether the window answers `stale` below its horizon. */
  readonly horizon: boolean;
  readonly owner: string;
  readonly signature: string;
  /** Field/amount pairs, validated; applied together or not at all. */
  readonly deltas: ReadonlyArray<readonly [field: string, amount: bigint]>;
  readonly scope?: string | undefined;
  readonly order?: Order | undefined;
  readonly meta?: JsonValue | undefined;
}

/**
 * The result of a ledger apply, a union on `outcome` with one member per outcome (so a chain of
 * checks can end in a `never` check): after `r.outcome === 'applied'`, `r.seq` is the journal
 * sequence number of the entry written; a `duplicate` or `stale` answer wrote nothing and has no
 * `seq`.
 */
export type LedgerApplyResult =
  | {
      readonly outcome: 'applied';
      /** The owner's balances after the call, the deltas added. */
      readonly balances: Balances;
      /** The journal sequence number of the entry written (see {@link JournalEntry.seq}). */
      readonly seq: number;
    }
  | {
      /** The window holds the signature: a repeat. */
      readonly outcome: 'duplicate';
      /** The owner's balances, unchanged by the call. */
      readonly balances: Balances;
      /** Absent: nothing was written. */
      readonly seq?: never;
    }
  | {
      /** Absent from the window, at or below its horizon: not applied (see `ledger.resolve`). */
      readonly outcome: 'stale';
      /** The owner's balances, unchanged by the call. */
      readonly balances: Balances;
      /** Absent: nothing was written. */
      readonly seq?: never;
    };

/** What {@link Store.ledgerResolve} decided for an entry an apply answered `stale` (or any entry). */
export type ResolveOutcome = 'applied' | 'duplicate' | 'unknown';

/**
 * The result of a ledger resolve: `applied` (proven never applied, and applied now, with its
 * journal `seq`), `duplicate` (the owner's window or retained journal holds the signature) or
 * `unknown` (neither can be proven; nothing changed). `balances` are the owner's after the call.
 * A discriminated union: after `r.outcome === 'applied'`, `r.seq` is a `number`.
 *
 * @example
 * ```ts
 * const ledger = createLedger({ capacity: 4 });
 * const r = await ledger.resolve({ owner: 'p1', signature: 's1', deltas: { coins: 5 }, order: 7 });
 * r.outcome; // 'applied'
 * // Narrowed by the outcome: `seq` is a number here, with no `undefined` to handle.
 * const seq: number = r.outcome === 'applied' ? r.seq : 0;
 * seq; // 1
 * r.balances; // { coins: 5n }
 * ```
 */
export type LedgerResolveResult =
  | { readonly outcome: 'applied'; readonly balances: Balances; readonly seq: number }
  | { readonly outcome: 'duplicate'; readonly balances: Balances }
  | { readonly outcome: 'unknown'; readonly balances: Balances };

/** One applied entry, as kept for reconciliation. */
export interface JournalEntry {
  /**
   * The owner's own count of applied entries: 1, 2, 3, ... per owner, on every store (a
   * ledger-wide counter would be a cross-slot key on Redis), so the same history gives the same
   * seqs everywhere; `apply` returns it. Across owners, entries come in the order the store
   * applied them.
   */
  readonly seq: number;
  readonly owner: string;
  readonly signature: string;
  readonly scope?: string;
  readonly order?: Order;
  readonly deltas: Balances;
  readonly meta?: JsonValue;
  /** Store time (ms) of the apply. */
  readonly at: number;
}

/** A journal query; every given field must match. */
export interface JournalQuery {
  readonly owner?: string | undefined;
  readonly scope?: string | undefined;
  /** Only entries with `seq` greater than this, for paging one owner's journal (needs `owner`). */
  readonly after?: number | undefined;
  /** At most this many entries, oldest first. */
  readonly limit?: number | undefined;
}

/** The window of one owner as a store reports it. */
export interface WindowState {
  /** Oldest first. */
  readonly signatures: string[];
  /** The highest order ever evicted, when one was. */
  readonly horizon?: Order;
}
