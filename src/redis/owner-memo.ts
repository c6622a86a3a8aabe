import { ownerKeys } from './keys.js';

// Each process remembers the keys of the owners it applies for and which (ledger, owner) and
// (ledger, scope, owner) registrations it has already made, so the registry SADD is paid once per
// pair and process, not once per apply. 50 000 owners x ~300 bytes (two keys, a small Set) =
// ~15 MB per process at most; a forgotten owner costs one more idempotent SADD, never a wrong answer.
const REGISTERED_CACHE = 50_000;

/** What this process remembers of one (ledger, owner): its keys and what it has registered. */
export interface OwnerMemo {
  readonly keys: [state: string, journal: string];
  inLedger: boolean;
  readonly scopes: Set<string>;
  /** The client's connection generation the registrations were made in (see connection-generation.ts). */
  generation: number;
}

// Scopes remembered per owner: a player sits in a handful of rooms at a time; past this the
// oldest is forgotten, which costs one more idempotent SADD if it comes back, never a wrong answer.
const SCOPES_PER_OWNER = 64;

export function rememberScope(memo: OwnerMemo, scope: string): void {
  if (memo.scopes.size >= SCOPES_PER_OWNER) memo.scopes.delete(memo.scopes.values().next().value as string);
  memo.scopes.add(scope);
}

/**
 * Per (ledger, owner): the escaped keys (built once, not on every apply) and the registrations made,
 * bounded to REGISTERED_CACHE owners, oldest forgotten first.
 */
export function createOwnerMemo(prefix: string): { get(ledger: string, owner: string): OwnerMemo } {
  const byLedger = new Map<string, Map<string, OwnerMemo>>();
  let size = 0;
  return {
    get(ledger, owner) {
      let memos = byLedger.get(ledger);
      if (memos === undefined) byLedger.set(ledger, (memos = new Map()));
      let memo = memos.get(owner);
      if (memo === undefined) {
        if (size >= REGISTERED_CACHE) {
          // Forget the oldest owner of the oldest ledger that has one (a Map iterates in insertion order).
          for (const [name, map] of byLedger) {
            const first = map.keys().next();
            if (!first.done) {
              map.delete(first.value);
              size--;
            }
            if (map.size === 0 && name !== ledger) byLedger.delete(name);
            if (!first.done) break;
          }
        }
        memo = { keys: ownerKeys(prefix, ledger, owner), inLedger: false, scopes: new Set(), generation: 0 };
        memos.set(owner, memo);
        size++;
      }
      return memo;
    },
  };
}
