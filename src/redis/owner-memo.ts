import { LruMap } from '../core/lru-map.js';
import { ownerKeys } from './keys.js';

// Each process remembers the keys of the owners it applies for and which (ledger, owner) and
// (ledger, scope, owner) registrations it has already made, so the registry SADD is paid once per
// pair and process, not once per apply. 50 000 owners x ~300 bytes (two keys, a small Set) =
// ~15 MB per process at most; a forgotten owner costs one more idempotent SADD, never a wrong answer.
export const REGISTERED_CACHE = 50_000;

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
 * bounded to REGISTERED_CACHE owners, the least recently used forgotten first ({@link LruMap}: O(1); a
 * Map evicted from its front walks the holes its deletes leave, ~10-20 µs per apply once full:
 * `node scripts/micro-costs.mjs map-evict`).
 */
export function createOwnerMemo(prefix: string): { get(ledger: string, owner: string): OwnerMemo } {
  const memos = new LruMap<string, OwnerMemo>(REGISTERED_CACHE);
  return {
    get(ledger, owner) {
      // Length-prefixed: no two (ledger, owner) pairs share a key, whatever they contain.
      const id = `${ledger.length}:${ledger}${owner}`;
      let memo = memos.get(id);
      if (memo === undefined) {
        memo = { keys: ownerKeys(prefix, ledger, owner), inLedger: false, scopes: new Set(), generation: 0 };
        memos.set(id, memo);
      }
      return memo;
    },
  };
}
